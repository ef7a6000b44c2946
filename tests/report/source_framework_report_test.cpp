// A report names the source framework its reference came from, once at the top and wherever it
// compares against it: TensorFlow for a TensorFlow export, PyTorch for a PyTorch one and for a
// reference folder that nothing names (parity run on a bare folder).

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "onnxproof/localize/localize.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/report/localize_report.h"
#include "onnxproof/report/parity_report.h"
#include "onnxproof/report/report.h"
#include "onnxproof/report/ship_summary.h"
#include "test_support.h"

namespace onnxproof {
namespace {

using testing::single_node_model;
using testing::TempDir;
using testing::tensor_value;
using testing::write_bytes;

Tensor floats(const std::vector<float>& values) {
  auto tensor = *Tensor::zeros(DType::float32, {2, 4});
  std::copy(values.begin(), values.end(), tensor.mutable_values<float>().begin());
  return tensor;
}

// y = Relu(x) proved against a reference of `framework` that holds a NaN where Relu gives 1.
ParityResult prove_against(const std::string& framework, const TempDir& dir) {
  const auto model = single_node_model("Relu", {tensor_value("x", onnx::TensorProto::FLOAT, {2, 4})},
                                       tensor_value("y", onnx::TensorProto::FLOAT, {2, 4}));
  write_bytes(dir / "relu.onnx", model.SerializeAsString());
  ReferenceCase c;
  c.data_set = "test_data_set_0";
  c.inputs.push_back({"x", floats({-2, -1, 0, 1, 2, 3, 4, 5})});
  c.outputs.push_back({"y", floats({0, 0, 0, NAN, 2, 3, 4, 5})});
  Reference reference;
  reference.cases.push_back(std::move(c));
  reference.framework = framework;
  ParityOptions options;
  options.intra_op_threads = 1;
  options.compare_optimization_off = false;
  auto result = run_parity(dir / "relu.onnx", reference, options);
  EXPECT_TRUE(result) << result.error().describe();
  return result ? *result : ParityResult{};
}

// The run's report as the pipeline writes it: the parity step failed on the NaN, and the
// localization named no module.
Report failed_report(const std::string& framework, const TempDir& dir) {
  Report report;
  report.model = framework == "tensorflow" ? "keras:MobileNetV3Small" : "torchvision:resnet18";
  report.framework = framework;
  report.parity = prove_against(framework, dir);
  report.findings = report.parity->findings;
  report.steps = {{.name = "parity", .status = StepStatus::fail, .seconds = 1.0}};
  Localization localization;
  localization.data_set = "test_data_set_0";
  localization.provider = "cpu";
  localization.framework = framework;
  ModuleComparison dense;
  dense.module = "dense";
  dense.matched = true;
  dense.output_error = 0.5;
  dense.outputs_agree = false;
  localization.modules.push_back(dense);
  report.localization = localization;
  finish_report(report);
  return report;
}

}  // namespace

TEST(SourceFrameworkReport, ATensorFlowRunSaysTensorFlowAndNeverPyTorch) {
  TempDir dir;
  const Report report = failed_report("tensorflow", dir);
  const auto nan = std::find_if(report.findings.begin(), report.findings.end(),
                                [](const Finding& f) { return f.code == FindingCode::nan_or_inf; });
  ASSERT_NE(nan, report.findings.end());
  EXPECT_NE(nan->message.find("NaN/Inf positions differ from TensorFlow's"), std::string::npos) << nan->message;
  const std::string md = report_to_markdown(report);
  const std::string html = report_to_html(report);
  for (const char* said : {"Source framework: TensorFlow", "## Parity (ONNX Runtime against TensorFlow)",
                           "within 8x TensorFlow float32's own distance", "error vs exact (ONNX / TensorFlow)"})
    EXPECT_NE(md.find(said), std::string::npos) << said << "\n" << md;
  EXPECT_NE(html.find("<p>Source framework: TensorFlow</p>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Parity (ONNX Runtime against TensorFlow)</h2>"), std::string::npos);
  EXPECT_EQ(md.find("PyTorch"), std::string::npos) << md;
  EXPECT_EQ(html.find("PyTorch"), std::string::npos);
  EXPECT_EQ(report_to_json(report).at("framework"), "tensorflow");
  EXPECT_NE(summarize_for_shipping(report).answer.find("outputs differ from TensorFlow's beyond"), std::string::npos)
      << summarize_for_shipping(report).answer;
  const std::string svg = localization_plot_svg(*report.localization);
  EXPECT_NE(svg.find("TensorFlow's"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("PyTorch"), std::string::npos) << svg;
  std::ostringstream printed;
  print_parity_result(printed, *report.parity);
  EXPECT_NE(printed.str().find("as a multiple of TensorFlow float32's own"), std::string::npos) << printed.str();

  Report passed;
  passed.framework = "tensorflow";
  passed.verdict = Verdict::pass;
  EXPECT_NE(summarize_for_shipping(passed).answer.find("ONNX Runtime matches TensorFlow within tolerance"),
            std::string::npos);
}

TEST(SourceFrameworkReport, APyTorchRunAndAnUnnamedReferenceSayPyTorch) {
  TempDir dir;
  const Report report = failed_report("torch", dir);
  const std::string md = report_to_markdown(report);
  for (const char* said : {"Source framework: PyTorch", "## Parity (ONNX Runtime against PyTorch)",
                           "within 8x PyTorch float32's own distance", "NaN/Inf positions differ from PyTorch's"})
    EXPECT_NE(md.find(said), std::string::npos) << said << "\n" << md;
  EXPECT_EQ(md.find("TensorFlow"), std::string::npos) << md;
  EXPECT_EQ(report_to_json(report).at("framework"), "torch");

  Report unnamed = failed_report("", dir);  // parity on a reference folder with no export.json beside it
  const std::string unnamed_md = report_to_markdown(unnamed);
  EXPECT_NE(unnamed_md.find("NaN/Inf positions differ from PyTorch's"), std::string::npos) << unnamed_md;
  EXPECT_EQ(unnamed_md.find("Source framework:"), std::string::npos);
  EXPECT_FALSE(report_to_json(unnamed).contains("framework"));
}

}  // namespace onnxproof
