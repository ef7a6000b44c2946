// End-to-end tests of the onnxproof binary: exit codes, stdout and the one-line errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/tensor/tensor_io.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;
namespace fs = std::filesystem;

namespace {

CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

fs::path fixture(const std::string& name) { return fs::path(ONNXPROOF_FIXTURES) / name; }

TEST(CliCheck, ResNet18PrintsTheSummaryAndPasses) {
  const auto result = onnxproof_cli({"check", fixture("resnet18.onnx").string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  for (const char* expected :
       {"IR version 8", "producer pytorch", "opset imports    ai.onnx 17", "input   float32   batch x 3 x 224 x 224",
        "logits  float32   batch x 1000", "ai.onnx::Conv", "initializers     ", "checker          pass",
        "shape inference  pass", "findings         none", "verdict          pass"}) {
    EXPECT_NE(result.out.find(expected), std::string::npos) << "missing '" << expected << "' in:\n" << result.out;
  }
}

TEST(CliCheck, JsonCarriesTheSummaryFindingsAndVersions) {
  TempDir dir;
  const auto result =
      onnxproof_cli({"check", fixture("resnet18.onnx").string(), "--json", (dir / "check.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(read_text(dir / "check.json"));
  EXPECT_EQ(json["schema"], "onnxproof.check/1");
  EXPECT_EQ(json["verdict"], "pass");
  EXPECT_EQ(json["summary"]["opset_imports"]["ai.onnx"], 17);
  EXPECT_EQ(json["summary"]["inputs"][0]["shape"], nlohmann::json::parse(R"(["batch", 3, 224, 224])"));
  EXPECT_EQ(json["findings"].size(), 0U);
  EXPECT_EQ(json["versions"]["onnxruntime"],
            locked_version("onnxruntime"));  // the engine's library is the lock's release
}

TEST(CliCheck, TruncatedModelIsOneClearLine) {
  TempDir dir;
  const std::string bytes = read_text(fixture("resnet18.onnx"));
  write_bytes(dir / "cut.onnx", bytes.substr(0, bytes.size() / 2));
  expect_one_line_error(onnxproof_cli({"check", (dir / "cut.onnx").string()}), 3, "not a valid ONNX model");
}

// Names holding terminal control sequences (clear screen, a C1 CSI) are printed escaped, never raw.
TEST(CliCheck, ControlBytesInNamesAreNotSentToTheTerminal) {
  const std::string hostile =
      "out\x1b[2J\x07\xc2\x9b"
      "31m";
  const auto model = single_node_model("Relu", {tensor_value("x", onnx::TensorProto::FLOAT, {1, 4})},
                                       tensor_value(hostile, onnx::TensorProto::FLOAT, {1, 4}));
  TempDir dir;
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  const auto result = onnxproof_cli({"check", (dir / "m.onnx").string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char byte : {'\x1b', '\x07'}) EXPECT_EQ(result.out.find(byte), std::string::npos);
  EXPECT_EQ(result.out.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(result.out.find("out\\x1b[2J\\x07\\u009b31m"), std::string::npos) << result.out;
}

TEST(CliCheck, TextFileIsOneClearLine) {
  TempDir dir;
  write_bytes(dir / "notes.onnx", "these are my notes, not a model\n");
  expect_one_line_error(onnxproof_cli({"check", (dir / "notes.onnx").string()}), 3, "notes.onnx");
}

TEST(CliCheck, EscapingExternalDataIsOneClearLine) {
  TempDir dir;
  fs::create_directories(dir / "model");
  write_bytes(dir / "secret.bin", std::string(32, 's'));
  write_bytes(dir / "model" / "m.onnx", model_with_external_weight("../secret.bin").SerializeAsString());
  expect_one_line_error(onnxproof_cli({"check", (dir / "model" / "m.onnx").string()}), 3,
                        "external data location '../secret.bin' escapes the model's folder");
}

TEST(CliCheck, MissingFileAndMissingArgument) {
  expect_one_line_error(onnxproof_cli({"check", "/nonexistent/model.onnx"}), 3,
                        "no such file: /nonexistent/model.onnx");
  expect_one_line_error(onnxproof_cli({"check"}), 2, "model is required");
  expect_one_line_error(onnxproof_cli({"frobnicate"}), 2, "frobnicate");
}

TEST(CliCheck, OpsetNewerThanTheOnnxLibraryIsOneClearLine) {
  TempDir dir;
  auto model = matmul_model(4, 2);
  model.mutable_opset_import(0)->set_version(30);
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  expect_one_line_error(onnxproof_cli({"check", (dir / "m.onnx").string()}), 3,
                        "opset 30 of ai.onnx, newer than onnxproof can check and run");
}

TEST(CliCheck, AtenFallbackFailsTheCheckWithExitCode1) {
  TempDir dir;
  auto model = single_node_model("ATen", {tensor_value("a", onnx::TensorProto::FLOAT, {8})},
                                 tensor_value("c", onnx::TensorProto::FLOAT, {8}), 17, "org.pytorch.aten");
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  const auto result = onnxproof_cli({"check", (dir / "m.onnx").string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.out.find("error   CUSTOM_DOMAIN_OP"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("verdict          fail"), std::string::npos);
}

TEST(CliRun, ResNet18OutputsMatchPyTorch) {
  TempDir dir;
  const auto result =
      onnxproof_cli({"run", fixture("resnet18.onnx").string(), "--input",
                     "input=" + fixture("resnet18_input.npy").string(), "--output-dir", dir.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto onnx_output = read_tensor_pb(dir / "output_0.pb");
  ASSERT_TRUE(onnx_output) << onnx_output.error().describe();
  EXPECT_EQ(onnx_output->name, "logits");
  auto torch_output = read_npy(fixture("resnet18_torch_output.npy"));
  ASSERT_TRUE(torch_output);
  const auto comparison = compare_tensors(*torch_output, onnx_output->tensor, Tolerance{1e-3, 1e-5});
  EXPECT_TRUE(comparison.allclose) << comparison.describe();
  const auto manifest = nlohmann::json::parse(read_text(dir / "outputs.json"));
  EXPECT_EQ(manifest[0]["name"], "logits");
  EXPECT_EQ(manifest[0]["shape"], nlohmann::json::parse("[2, 1000]"));
}

// --provider cuda where it cannot run: one line saying why (here: the CPU build has no CUDA
// provider library, or a GPU build finds no device), exit 3, never a crash.
TEST(CliRun, CudaWhereItCannotRunSaysWhy) {
  TempDir dir;
  const auto result = onnxproof_cli({"run", fixture("resnet18.onnx").string(), "--input",
                                     "input=" + fixture("resnet18_input.npy").string(), "--output-dir",
                                     dir.path().string(), "--provider", "cuda"});
  if (result.exit_code == 0) GTEST_SKIP() << "CUDA runs on this machine";
  expect_one_line_error(result, 3, "'cuda'");
  const bool precise = result.err.find("no provider library") != std::string::npos ||
                       result.err.find("no device") != std::string::npos ||
                       result.err.find("is not available in this ONNX Runtime") != std::string::npos ||
                       result.err.find("a library it needs is not") != std::string::npos;
  EXPECT_TRUE(precise) << result.err;
}

// ONNXPROOF_ONNXRUNTIME selects the ONNX Runtime build at run time (the driver starts itself again
// with that folder first on LD_LIBRARY_PATH): here the CPU build's own folder, which must work, and
// a folder with no library, which is one clear line.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : m_name(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnvironment() { ::unsetenv(m_name); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* m_name;
};

TEST(CliRun, OnnxRuntimeChosenAtRunTime) {
  TempDir dir;
  {
    const ScopedEnvironment chosen("ONNXPROOF_ONNXRUNTIME", ONNXPROOF_ORT_LIBRARY_DIR);
    const auto result =
        onnxproof_cli({"run", fixture("resnet18.onnx").string(), "--input",
                       "input=" + fixture("resnet18_input.npy").string(), "--output-dir", dir.path().string()});
    EXPECT_EQ(result.exit_code, 0) << result.err;
  }
  const ScopedEnvironment missing("ONNXPROOF_ONNXRUNTIME", (dir / "nowhere").string());
  const auto result = onnxproof_cli({"check", fixture("resnet18.onnx").string()});
  expect_one_line_error(result, 3, "names no ONNX Runtime build: no libonnxruntime.so.1 in");
}

TEST(CliRun, NpyFormatWritesNpyOutputs) {
  TempDir dir;
  const auto result = onnxproof_cli({"run", fixture("resnet18.onnx").string(), "--input",
                                     "input=" + fixture("resnet18_input.npy").string(), "--output-dir",
                                     dir.path().string(), "--format", "npy"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto output = read_npy(dir / "output_0.npy");
  ASSERT_TRUE(output) << output.error().describe();
  EXPECT_EQ(output->shape(), (std::vector<int64_t>{2, 1000}));
}

// A re-used --output-dir: the files the earlier run's outputs.json lists and this run did not
// write are removed, so the folder holds exactly what outputs.json lists (other files are left
// alone). Output files no outputs.json lists are not onnxproof's: the folder is refused.
TEST(CliRun, ReusedOutputFolderKeepsNoStaleOutputs) {
  TempDir dir;
  const std::vector<std::string> run = {"run",          fixture("resnet18.onnx").string(),
                                        "--input",      "input=" + fixture("resnet18_input.npy").string(),
                                        "--output-dir", dir.path().string()};
  ASSERT_EQ(onnxproof_cli(run).exit_code, 0);
  write_bytes(dir / "notes.txt", "mine");
  auto as_npy = run;
  as_npy.insert(as_npy.end(), {"--format", "npy"});
  const auto result = onnxproof_cli(as_npy);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::exists(dir / "output_0.npy"));
  EXPECT_FALSE(fs::exists(dir / "output_0.pb"));
  EXPECT_EQ(read_text(dir / "notes.txt"), "mine");
  write_bytes(dir / "output_7.pb", "mine");
  expect_one_line_error(onnxproof_cli(as_npy), 2, "it holds output_7.pb, which no outputs.json of onnxproof run lists");
  EXPECT_EQ(read_text(dir / "output_7.pb"), "mine");
}

TEST(CliRun, MismatchedInputsNameTheInputAndWhatWasExpected) {
  TempDir dir;
  const std::string model = fixture("resnet18.onnx").string();
  const std::string out_dir = dir.path().string();
  expect_one_line_error(onnxproof_cli({"run", model, "--input", "image=" + fixture("resnet18_input.npy").string(),
                                       "--output-dir", out_dir}),
                        2, "'image' is not an input of the model (inputs: input)");

  auto wrong_dtype = *Tensor::zeros(DType::int64, {1, 3, 224, 224});
  ASSERT_TRUE(write_npy(dir / "int.npy", wrong_dtype));
  expect_one_line_error(
      onnxproof_cli({"run", model, "--input", "input=" + (dir / "int.npy").string(), "--output-dir", out_dir}), 2,
      "input 'input': expected float32 batchx3x224x224, got int64 1x3x224x224 (wrong dtype)");

  auto wrong_rank = *Tensor::zeros(DType::float32, {3, 224, 224});
  ASSERT_TRUE(write_npy(dir / "rank3.npy", wrong_rank));
  expect_one_line_error(
      onnxproof_cli({"run", model, "--input", "input=" + (dir / "rank3.npy").string(), "--output-dir", out_dir}), 2,
      "(wrong rank)");

  expect_one_line_error(onnxproof_cli({"run", model, "--input", "input", "--output-dir", out_dir}), 2,
                        "--input takes NAME=FILE");
  expect_one_line_error(onnxproof_cli({"run", model, "--input", "input=/nonexistent.npy", "--output-dir", out_dir}), 3,
                        "no such file: /nonexistent.npy");
  expect_one_line_error(onnxproof_cli({"run", model, "--output-dir", out_dir}), 2,
                        "input 'input' (float32 batchx3x224x224) is missing");
}

TEST(CliOps, CleanResNet18IsSupportedOnEveryTarget) {
  TempDir dir;
  const auto result = onnxproof_cli({"ops", fixture("resnet18.onnx").string(), "--target",
                                     "ort-cpu,ort-cuda,tensorrt,openvino", "--json", (dir / "ops.json").string()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out.find("OP_UNSUPPORTED_BY_TARGET"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("ai.onnx::Conv"), std::string::npos);
  const auto json = nlohmann::json::parse(read_text(dir / "ops.json"));
  EXPECT_EQ(json["targets"].size(), 4U);
  for (const auto& op : json["operators"]) {
    for (const auto& [target, verdict] : op["targets"].items()) {
      EXPECT_NE(verdict["status"], "unsupported") << op["op_type"] << " on " << target;
    }
  }
  expect_one_line_error(onnxproof_cli({"ops", fixture("resnet18.onnx").string(), "--target", "coreml"}), 2,
                        "unknown target");
  expect_one_line_error(onnxproof_cli({"ops"}), 2, "ops needs a MODEL.onnx");
}

TEST(CliOps, ProbeCountsAndDiffsAgainstTheDocumentedTable) {
  const auto result = onnxproof_cli({"ops", "probe", "--op", "Add", "--op", "HardSwish", "--all-versions"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("not-implemented  ai.onnx::Add-6"), std::string::npos) << result.out;
  // HardSwish is an ONNX function: ONNX Runtime expands it although it documents no kernel. The
  // probe's default opset is the newest ONNX and ONNX Runtime support: HardSwish-22 is probed too.
  EXPECT_NE(result.out.find("differs          ai.onnx::HardSwish-14: documented absent, probed supported"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("probed 7 schemas on cpu (ONNX Runtime " + locked_version("onnxruntime") +
                            "): 5 supported, 2 not implemented, 0 errors; 2 differences"),
            std::string::npos)
      << result.out;
}

TEST(CliSimplify, ResNet18LosesItsIdentityNodesAndStaysEqual) {
  TempDir dir;
  const auto result = onnxproof_cli({"simplify", fixture("resnet18.onnx").string(), "-o", (dir / "sim.onnx").string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("Identity                    16 -> 0"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("proof            2 cases, max abs difference"), std::string::npos) << result.out;
  EXPECT_EQ(onnxproof_cli({"check", (dir / "sim.onnx").string()}).exit_code, 0);
  // The simplified model still matches PyTorch.
  const auto run =
      onnxproof_cli({"run", (dir / "sim.onnx").string(), "--input", "input=" + fixture("resnet18_input.npy").string(),
                     "--output-dir", (dir / "out").string(), "--format", "npy"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(compare_tensors(*read_npy(fixture("resnet18_torch_output.npy")), *read_npy(dir / "out" / "output_0.npy"))
                  .allclose);
  int leftovers = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++leftovers;
  EXPECT_EQ(leftovers, 2);  // sim.onnx and out/: no temporary files left behind
}

TEST(CliSimplify, ExternalDataModelAndBadArguments) {
  TempDir dir;
  write_bytes(dir / "m.onnx", model_with_external_weight("weights.bin").SerializeAsString());
  write_bytes(dir / "weights.bin", std::string(32, '\0'));
  const auto nothing = onnxproof_cli({"simplify", (dir / "m.onnx").string(), "-o", (dir / "s.onnx").string()});
  EXPECT_EQ(nothing.exit_code, 0) << nothing.err;
  EXPECT_NE(nothing.out.find("nothing to simplify"), std::string::npos) << nothing.out;
  EXPECT_EQ(onnxproof_cli({"check", (dir / "s.onnx").string()}).exit_code, 0);  // a copy, weights inline
  expect_one_line_error(onnxproof_cli({"simplify", (dir / "m.onnx").string(), "-o", (dir / "m.onnx").string()}), 2,
                        "must not be the input model");
  expect_one_line_error(onnxproof_cli({"simplify", "/nonexistent.onnx", "-o", (dir / "x.onnx").string()}), 3,
                        "no such file");
  expect_one_line_error(
      onnxproof_cli({"simplify", (dir / "m.onnx").string(), "-o", (dir / "x.onnx").string(), "--max-fold-bytes", "-5"}),
      2, "--max-fold-bytes must be 0 or more");
}

// No output may overwrite an input (the model, its external data) or replace anything but a
// regular file: each of these used to destroy the user's file and exit 0.
TEST(CliOutputs, NeverOverwriteAnInputOrANonRegularFile) {
  TempDir dir;
  write_bytes(dir / "m.onnx", model_with_external_weight("weights.bin").SerializeAsString());
  const std::string weights(32, '\x01');
  write_bytes(dir / "weights.bin", weights);
  const std::string model = (dir / "m.onnx").string();
  const std::string model_bytes = read_text(dir / "m.onnx");
  expect_one_line_error(onnxproof_cli({"check", model, "--json", model}), 2, "it is an input of this command");
  expect_one_line_error(onnxproof_cli({"check", model, "--json", (dir / "weights.bin").string()}), 2,
                        "it is an input of this command");
  expect_one_line_error(onnxproof_cli({"ops", model, "--json", model}), 2, "it is an input of this command");
  expect_one_line_error(onnxproof_cli({"simplify", model, "-o", (dir / "weights.bin").string()}), 2,
                        "it is an input of this command");
  expect_one_line_error(onnxproof_cli({"check", model, "--json", dir.path().string()}), 2, "it is not a regular file");
  expect_one_line_error(onnxproof_cli({"simplify", model, "-o", dir.path().string()}), 2, "it is not a regular file");
  EXPECT_EQ(read_text(dir / "m.onnx"), model_bytes);
  EXPECT_EQ(read_text(dir / "weights.bin"), weights);
  // A FIFO stands for any non-regular file (a device node as root): never replaced.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  expect_one_line_error(onnxproof_cli({"simplify", model, "-o", (dir / "fifo").string()}), 2,
                        "it is not a regular file");
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
}

// A path that is not UTF-8 used to end in "internal error: [json.exception.type_error.316]".
TEST(CliOutputs, NonUtf8PathsAreHandled) {
  TempDir dir;
  const fs::path model = dir / "m\xff.onnx";
  write_bytes(model, matmul_model(4, 2).SerializeAsString());
  const auto check = onnxproof_cli({"check", model.string(), "--json", (dir / "c.json").string()});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_TRUE(fs::exists(dir / "c.json"));
  expect_one_line_error(onnxproof_cli({"export", "--model", "torchvision:resnet18", "--input", "x=1x8:float32", "--out",
                                       (dir / "out\xfe").string()}),
                        2, "--out is not valid UTF-8 text");
}

// An interpreter that cannot be run: --version still lists the engine and says why the front
// end's versions are missing.
TEST(CliVersion, MissingInterpreterIsSaidNotFatal) {
  const auto result = run_cli("/usr/bin/env", {"ONNXPROOF_PYTHON=/nonexistent/python3", ONNXPROOF_CLI, "--version"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("onnxruntime        " + locked_version("onnxruntime")), std::string::npos) << result.out;
  EXPECT_NE(
      result.out.find("python             not available: cannot run the Python interpreter '/nonexistent/python3'"),
      std::string::npos)
      << result.out;
}

TEST(CliVersion, ListsEveryTool) {
  const auto result = onnxproof_cli({"--version"});
  EXPECT_EQ(result.exit_code, 0);
  // The engine's versions, and the front end's as the pinned interpreter reports them now: the
  // lock's torch and onnx (setup builds the engine's ONNX at the lock's onnx version too).
  const std::string onnx = locked_version("onnx");
  const std::string torch = locked_version("torch");
  for (const std::string& tool : {std::string("onnxproof"), "onnx               " + onnx, std::string("protobuf"),
                                  "onnxruntime        " + locked_version("onnxruntime"), "torch              " + torch,
                                  "onnx (python)      " + onnx, std::string("onnxscript"), std::string("python"),
                                  // each framework's interpreter: TensorFlow's runs its exports
                                  std::string("python (tensorflow)"), std::string("tf2onnx")}) {
    EXPECT_NE(result.out.find(tool), std::string::npos) << result.out;
  }
}

}  // namespace
