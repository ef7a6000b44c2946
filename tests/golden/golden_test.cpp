// freeze_golden writes the outputs of the proof it stands on (the parity run's CPU session), so
// the model is not run a second time on the same inputs; without them it runs the model itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "onnxproof/golden/golden.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/tensor/tensor_io.h"
#include "test_support.h"

using namespace onnxproof;
using onnxproof::testing::TempDir;

namespace {

Tensor floats(std::vector<int64_t> shape, std::vector<float> values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return *Tensor::from_bytes(DType::float32, std::move(shape), std::move(bytes));
}

// y = x @ W with W all 0.5 (4 x 2): two cases of different batch sizes, PyTorch's outputs exact.
struct Fixture {
  TempDir dir;
  std::filesystem::path model = dir / "model.onnx";
  Reference reference;

  Fixture() {
    std::ofstream(model, std::ios::binary) << onnxproof::testing::matmul_model(4, 2).SerializeAsString();
    for (int batch : {1, 3}) {
      ReferenceCase c;
      c.data_set = "test_data_set_" + std::to_string(reference.cases.size());
      c.sizes = {{"N", batch}};
      c.inputs.push_back({"x", floats({batch, 4}, std::vector<float>(4 * batch, 1.0F))});
      c.outputs.push_back({"y", floats({batch, 2}, std::vector<float>(2 * batch, 2.0F))});
      reference.cases.push_back(std::move(c));
    }
  }
};

float first_frozen_value(const std::filesystem::path& golden, const std::string& data_set) {
  auto tensor = read_tensor_pb(golden / data_set / "output_0.pb");
  EXPECT_TRUE(tensor) << tensor.error().describe();
  return tensor ? tensor->tensor.values<float>()[0] : -1.0F;
}

}  // namespace

TEST(Golden, ParityKeepsTheCpuOutputsOfEveryCase) {
  Fixture f;
  auto proof = run_parity(f.model, f.reference, ParityOptions{.keep_cpu_outputs = true});
  ASSERT_TRUE(proof) << proof.error().describe();
  ASSERT_TRUE(proof->passed());
  ASSERT_EQ(proof->cpu_outputs.size(), 2U);
  EXPECT_EQ(proof->cpu_outputs.at("test_data_set_1").at(0).shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(proof->cpu_output_names, std::vector<std::string>{"y"});
}

TEST(Golden, FreezeWritesTheProofsOutputsWithoutRunningTheModelAgain) {
  Fixture f;
  auto proof = run_parity(f.model, f.reference, ParityOptions{.keep_cpu_outputs = true});
  ASSERT_TRUE(proof && proof->passed());
  // Marked outputs: a freeze that ran the model again would write 2.0, not 7.0.
  for (auto& [data_set, outputs] : proof->cpu_outputs) outputs[0].mutable_values<float>()[0] = 7.0F;
  auto frozen = freeze_golden(f.model, f.reference, f.dir / "golden", GoldenOptions{}, &*proof);
  ASSERT_TRUE(frozen) << frozen.error().describe();
  ASSERT_TRUE(frozen->frozen);
  EXPECT_EQ(first_frozen_value(f.dir / "golden", "test_data_set_0"), 7.0F);
  EXPECT_EQ(first_frozen_value(f.dir / "golden", "test_data_set_1"), 7.0F);
  EXPECT_TRUE(frozen->parity.cpu_outputs.empty());  // the result does not carry a second copy
}

TEST(Golden, FreezeRunsTheModelWhenTheProofHasNoCpuOutputs) {
  Fixture f;
  auto proof = run_parity(f.model, f.reference, ParityOptions{.keep_cpu_outputs = true});
  ASSERT_TRUE(proof && proof->passed());
  proof->cpu_outputs.erase("test_data_set_1");  // e.g. a proof on another provider only
  auto frozen = freeze_golden(f.model, f.reference, f.dir / "golden", GoldenOptions{}, &*proof);
  ASSERT_TRUE(frozen && frozen->frozen);
  EXPECT_EQ(first_frozen_value(f.dir / "golden", "test_data_set_1"), 2.0F);
  auto verified = verify_golden(f.model, f.dir / "golden", GoldenOptions{});
  ASSERT_TRUE(verified) << verified.error().describe();
  EXPECT_TRUE(verified->passed());
}

// A model's weights kept beside it are recorded by digest too: a changed data file under an
// unchanged model.onnx is said at verification (info; the outputs decide, here within tolerance).
TEST(Golden, TheExternalDataIsRecordedAndItsChangeSaid) {
  Fixture f;
  onnx::ModelProto model = onnxproof::testing::matmul_model(4, 2);
  ASSERT_TRUE(save_model(model, f.model,
                         SaveOptions{.external = SaveOptions::External::always, .external_threshold_bytes = 1}));
  const auto data = f.dir / "model.onnx.data";
  ASSERT_TRUE(std::filesystem::exists(data));
  auto proof = run_parity(f.model, f.reference, ParityOptions{.keep_cpu_outputs = true});
  ASSERT_TRUE(proof && proof->passed());
  ASSERT_TRUE(freeze_golden(f.model, f.reference, f.dir / "golden", GoldenOptions{}, &*proof));
  std::ifstream manifest_file(f.dir / "golden" / "manifest.json");
  const auto manifest = nlohmann::json::parse(manifest_file);
  ASSERT_TRUE(manifest.contains("model_data_sha256")) << manifest.dump();
  EXPECT_EQ(manifest["model_data_sha256"].size(), 1U);
  EXPECT_TRUE(manifest["model_data_sha256"].contains("model.onnx.data")) << manifest.dump();

  auto unchanged = verify_golden(f.model, f.dir / "golden", GoldenOptions{});
  ASSERT_TRUE(unchanged) << unchanged.error().describe();
  EXPECT_FALSE(unchanged->model_changed);
  {
    std::fstream weights(data, std::ios::in | std::ios::out | std::ios::binary);
    const float nudged = 0.50000006F;  // one float32 step above 0.5: outputs within tolerance
    weights.write(reinterpret_cast<const char*>(&nudged), sizeof nudged);
  }
  auto changed = verify_golden(f.model, f.dir / "golden", GoldenOptions{});
  ASSERT_TRUE(changed) << changed.error().describe();
  EXPECT_TRUE(changed->model_changed);
  EXPECT_TRUE(changed->passed());
  const bool said = std::any_of(changed->findings.begin(), changed->findings.end(), [](const Finding& finding) {
    return finding.message.find("external data changed") != std::string::npos;
  });
  EXPECT_TRUE(said);
}
