// Which source framework a --model spec belongs to, and what follows from it before Python starts:
// the exporters --exporter takes, whether --input is needed, the run folder's name and the
// interpreter the front end runs with.

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "onnxproof/core/installation.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/pipeline/pipeline.h"
#include "test_support.h"

using namespace onnxproof;
using onnxproof::testing::TempDir;
using onnxproof::testing::write_bytes;

namespace {

ExportOptions options_for(const std::string& model, const std::string& exporter) {
  ExportOptions options;
  options.model = model;
  options.exporter = exporter;
  options.out = "out";
  return options;
}

// The usage error validate_export_options gives, or "" when it accepts the options.
std::string refusal(const ExportOptions& options) {
  const auto checked = validate_export_options(options);
  if (checked) return "";
  EXPECT_EQ(checked.error().code(), ErrorCode::usage) << checked.error().describe();
  return checked.error().message();
}

// The process's installation and ONNXPROOF_TF_PYTHON, restored when the test ends.
class InstallationScope {
 public:
  InstallationScope() : m_saved(installation()) {
    if (const char* value = std::getenv("ONNXPROOF_TF_PYTHON")) m_environment = value;
  }
  ~InstallationScope() {
    use_installation(m_saved);
    if (m_environment.empty())
      ::unsetenv("ONNXPROOF_TF_PYTHON");
    else
      ::setenv("ONNXPROOF_TF_PYTHON", m_environment.c_str(), 1);
  }
  InstallationScope(const InstallationScope&) = delete;
  InstallationScope& operator=(const InstallationScope&) = delete;

 private:
  Installation m_saved;
  std::string m_environment;
};

}  // namespace

TEST(SourceFramework, EverySpecFormBelongsToOne) {
  for (const char* spec : {"keras:MobileNetV3Small", "keras:ResNet50:include_top=false", "saved_model:models/encoder",
                           "saved_model:/abs/dir/", "model.keras", "runs/classifier.keras"})
    EXPECT_EQ(source_framework_of_spec(spec), "tensorflow") << spec;
  for (const char* spec : {"torchvision:resnet18", "timm:convnext_atto", "hf:BertModel:num_hidden_layers=1", "model.pt",
                           "weights.pth", "package.module:build", "models/keras.py.txt:build"})
    EXPECT_EQ(source_framework_of_spec(spec), "torch") << spec;
}

TEST(SourceFramework, AFileSpecBelongsToTheFrameworkItImports) {
  TempDir dir;
  const auto framework_of = [&](const std::string& name, const std::string& source) {
    write_bytes(dir / name, source);
    return source_framework_of_spec((dir / name).string() + ":build");
  };
  EXPECT_EQ(framework_of("a.py", "import numpy as np\nimport keras\n"), "tensorflow");
  EXPECT_EQ(framework_of("b.py", "from tensorflow import keras\n"), "tensorflow");
  EXPECT_EQ(framework_of("c.py", "def build():\n    import tensorflow as tf\n    return tf.Module()\n"), "tensorflow");
  EXPECT_EQ(framework_of("d.py", "from keras.layers import Dense\r\n"), "tensorflow");
  EXPECT_EQ(framework_of("e.py", "import tf_keras"), "tensorflow");
  EXPECT_EQ(framework_of("f.py", "\t from\ttensorflow.keras import layers\n"), "tensorflow");
  // Not an import of those modules: another module, a comment, a string, torch.
  EXPECT_EQ(framework_of("g.py", "import torch\nfrom torch import nn\n"), "torch");
  EXPECT_EQ(framework_of("h.py", "import tensorflow_hub\nimport keras_cv\nfrom kerastuner import x\n"), "torch");
  EXPECT_EQ(framework_of("i.py", "# import keras\ntext = 'import tensorflow'\n"), "torch");
  EXPECT_EQ(framework_of("j.py", "importkeras\nfromtensorflow import x\n"), "torch");
  // The probe: a PyTorch file importing TensorFlow inside a function (to compare with it) was
  // routed to TensorFlow. torch at the top decides; torch only inside a function does not.
  EXPECT_EQ(framework_of("k.py", "import torch\ndef check():\n    import tensorflow as tf\n"), "torch");
  EXPECT_EQ(framework_of("l.py", "from torch import nn\nimport keras\n"), "torch");
  EXPECT_EQ(framework_of("m.py", "import keras\ndef compare():\n    import torch\n"), "tensorflow");
  EXPECT_EQ(framework_of("n.py", "import torchvision\nimport keras\n"), "tensorflow");
  // A file that cannot be read is the default framework's: its front end names the error.
  EXPECT_EQ(source_framework_of_spec((dir / "missing.py").string() + ":build"), "torch");
  std::filesystem::create_directory(dir / "folder.py");
  EXPECT_EQ(source_framework_of_spec((dir / "folder.py").string() + ":build"), "torch");
}

TEST(SourceFramework, TitlesAndExportersComeFromOneTable) {
  EXPECT_EQ(source_title("torch"), "PyTorch");
  EXPECT_EQ(source_title(""), "PyTorch");  // an export.json older than the field
  EXPECT_EQ(source_title("tensorflow"), "TensorFlow");
  EXPECT_EQ(source_title("jax"), "jax");
  EXPECT_EQ(source_framework("jax"), nullptr);
  EXPECT_EQ(source_framework("tensorflow")->compared[0], "tf2onnx");
  EXPECT_EQ(source_framework("torch")->compared[0], "dynamo");
  EXPECT_EQ(worded_for("NaN or Inf positions differ between PyTorch and ONNX Runtime; PyTorch's", "tensorflow"),
            "NaN or Inf positions differ between TensorFlow and ONNX Runtime; TensorFlow's");
  EXPECT_EQ(worded_for("PyTorch's reference", "torch"), "PyTorch's reference");
}

TEST(ExporterOption, EachFrameworkTakesItsOwnExporters) {
  for (const char* exporter : {"auto", "torchscript", "dynamo", "both"})
    EXPECT_EQ(refusal(options_for("torchvision:resnet18", exporter)), "") << exporter;
  for (const char* exporter : {"auto", "tf2onnx", "keras", "both"})
    EXPECT_EQ(refusal(options_for("keras:MobileNetV3Small", exporter)), "") << exporter;
}

TEST(ExporterOption, AnotherFrameworksExporterIsNamedAsSuch) {
  EXPECT_EQ(refusal(options_for("keras:MobileNetV3Small", "dynamo")),
            "--exporter dynamo is a PyTorch exporter; keras:MobileNetV3Small is a TensorFlow model (its exporters: "
            "auto, tf2onnx, keras, both)");
  EXPECT_EQ(refusal(options_for("torchvision:resnet18", "tf2onnx")),
            "--exporter tf2onnx is a TensorFlow exporter; torchvision:resnet18 is a PyTorch model (its exporters: "
            "auto, torchscript, dynamo, both)");
  EXPECT_EQ(refusal(options_for("torchvision:resnet18", "onnx")),
            "--exporter must be auto, torchscript, dynamo or both, not 'onnx'");
  EXPECT_EQ(refusal(options_for("saved_model:dir", "onnx")),
            "--exporter must be auto, tf2onnx, keras or both, not 'onnx'");
}

TEST(InputOption, TensorFlowModelsBringTheirOwnSignature) {
  TempDir dir;
  write_bytes(dir / "tf_model.py", "import keras\n\ndef build():\n    return keras.Sequential()\n");
  write_bytes(dir / "torch_model.py", "import torch\n");
  for (const std::string& spec : std::vector<std::string>{"keras:MobileNetV3Small", "saved_model:encoder",
                                                          "model.keras", (dir / "tf_model.py").string() + ":build"})
    EXPECT_EQ(refusal(options_for(spec, "auto")), "") << spec;
  EXPECT_NE(refusal(options_for((dir / "torch_model.py").string() + ":build", "auto")).find("--input is required"),
            std::string::npos);
  // --dynamic on a signature input no --input declares: the front end, which reads the signature, checks it.
  ExportOptions relabelled = options_for("keras:MobileNetV3Small", "auto");
  relabelled.dynamic = {*parse_dynamic_axis("input_layer:0=images")};
  EXPECT_EQ(refusal(relabelled), "");
  relabelled.dynamic.push_back(*parse_dynamic_axis("input_layer:0=batch"));
  EXPECT_NE(refusal(relabelled).find("two labels"), std::string::npos);
  relabelled.model = "torchvision:resnet18";
  relabelled.dynamic.pop_back();
  EXPECT_EQ(refusal(relabelled), "--dynamic names input 'input_layer', which no --input declares");
}

TEST(ModelSpec, TensorFlowFormsNameTheirRunFolder) {
  EXPECT_TRUE(is_model_family("keras:MobileNetV3Small"));
  EXPECT_EQ(default_run_folder("keras:MobileNetV3Small"), std::filesystem::path("onnxproof-out/MobileNetV3Small"));
  EXPECT_EQ(default_run_folder("keras:ResNet50:include_top=false"), std::filesystem::path("onnxproof-out/ResNet50"));
  EXPECT_EQ(default_run_folder("saved_model:path/to/encoder"), std::filesystem::path("onnxproof-out/encoder"));
  EXPECT_EQ(default_run_folder("saved_model:path/to/encoder/"), std::filesystem::path("onnxproof-out/encoder"));
  EXPECT_EQ(default_run_folder("models/model.keras"), std::filesystem::path("onnxproof-out/model"));
}

TEST(FrontEndInterpreter, EachFrameworkHasItsOwnAndPythonWins) {
  InstallationScope scope;
  ::setenv("ONNXPROOF_TF_PYTHON", "/opt/tf/bin/python", 1);
  Installation resolved = resolve_installation("/nonexistent/bin/onnxproof");
  EXPECT_EQ(resolved.tf_python, "/opt/tf/bin/python");
  use_installation(resolved);
  EXPECT_EQ(front_end_interpreter("", "tensorflow"), "/opt/tf/bin/python");
  EXPECT_EQ(front_end_interpreter("", "torch"), resolved.python);
  EXPECT_EQ(front_end_interpreter("", ""), resolved.python);
  EXPECT_EQ(front_end_interpreter("/usr/bin/python3", "tensorflow"), "/usr/bin/python3");
  ::unsetenv("ONNXPROOF_TF_PYTHON");
  EXPECT_TRUE(resolve_installation("/nonexistent/bin/onnxproof").tf_python.ends_with(".venv-tf/bin/python"));
}

TEST(FrontEndInterpreter, OneThatCannotStartSaysWhereTensorFlowRuns) {
  InstallationScope scope;
  Installation broken = installation();
  broken.tf_python = "/nonexistent/tf/bin/python";
  use_installation(broken);
  TempDir dir;
  ExportOptions options = options_for("keras:MobileNetV3Small", "auto");
  options.out = dir / "run";
  std::ostringstream progress;
  const auto exported = run_export(options, progress);
  ASSERT_FALSE(exported);
  EXPECT_EQ(exported.error().code(), ErrorCode::not_found);
  EXPECT_NE(exported.error().message().find("cannot run the Python interpreter '/nonexistent/tf/bin/python'"),
            std::string::npos)
      << exported.error().describe();
  EXPECT_NE(exported.error().message().find(
                "TensorFlow models run in the environment scripts/setup.sh makes in .venv-tf; set ONNXPROOF_TF_PYTHON"),
            std::string::npos)
      << exported.error().describe();
}

TEST(SourceFramework, AFolderNamesTheFrameworkItsExportJsonNames) {
  TempDir dir;
  EXPECT_EQ(source_framework_beside(dir.path()), "");  // a bare reference folder: unknown
  write_bytes(dir / "export.json", R"({"schema": "onnxproof.export/1", "exporter": "tf2onnx", "findings": [],
                                       "framework": "tensorflow"})");
  EXPECT_EQ(source_framework_beside(dir.path()), "tensorflow");
  write_bytes(dir / "export.json", R"({"schema": "onnxproof.export/1", "exporter": "dynamo", "findings": []})");
  EXPECT_EQ(source_framework_beside(dir.path()), "torch");  // older than the field: PyTorch's
  write_bytes(dir / "export.json", R"({"schema": "another.tool/1"})");
  EXPECT_EQ(source_framework_beside(dir.path()), "");
}
