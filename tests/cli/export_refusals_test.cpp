// End-to-end tests of what the export refuses or stops: malformed specs, a forward that never
// returns or refuses its example, a terminated run, an interpreter without torch.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_support.h"

using namespace onnxproof::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string k_traps = std::string(ONNXPROOF_TEST_SOURCE_DIR) + "/fixtures/trap_models.py";

CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

TEST(Export, BadSpecsAreOneClearLine) {
  TempDir out;
  const std::string dir = out.path().string();
  expect_one_line_error(onnxproof_cli({"export", "--model", "resnet", "--input", "x=1x8:float32", "--out", dir}), 2,
                        "model spec 'resnet' must be FILE.py:CALLABLE");
  // A model file that is not there: a usage error before any work (tests/cli/first_hour_test.cpp).
  expect_one_line_error(
      onnxproof_cli({"export", "--model", "/nonexistent/model.py:build", "--input", "x=1x8:float32", "--out", dir}), 2,
      "no such file /nonexistent/model.py");
  expect_error_after_progress(
      onnxproof_cli({"export", "--model", k_traps + ":not_a_module", "--input", "x=1x8:float32", "--out", dir}), 2,
      "returned int, not a torch.nn.Module");
  expect_error_after_progress(
      onnxproof_cli({"export", "--model", "torchvision:no_such_net", "--input", "x=1x8:float32", "--out", dir}), 2,
      "torchvision has no model 'no_such_net'");
  expect_one_line_error(
      onnxproof_cli({"export", "--model", "torchvision:resnet18", "--input", "x=1xAx8:float32", "--out", dir}), 2,
      "dimension 'A' is not a non-negative integer");
  expect_one_line_error(
      onnxproof_cli({"export", "--model", "torchvision:resnet18", "--input", "x=1x8:float128", "--out", dir}), 2,
      "unknown dtype 'float128'");
  expect_one_line_error(onnxproof_cli({"export", "--model", "torchvision:resnet18", "--input", "x=1x8:float32",
                                       "--dynamic", "x0batch", "--out", dir}),
                        2, "expected NAME:AXIS=LABEL");
  // With inputs declared, another name is an output's axis (torch.onnx.export's dynamic_axes name
  // both): once the forward has run, a name that is neither is one line, exit 2.
  expect_error_after_progress(onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                             "--dynamic", "y:0=batch", "--out", dir}),
                              2, "names 'y', which is neither an input (x) nor an output");
  expect_error_after_progress(onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--input", "x=2x8:float32",
                                             "--exporter", "dynamo", "--opset", "17", "--out", dir}),
                              2, "the dynamo exporter writes opset 18 and newer");
  expect_one_line_error(onnxproof_cli({"export", "--model", k_traps + ":dict_output", "--out", dir}), 2,
                        "--input is required");  // torchvision:, timm: and hf: models bring their own
  // Another framework's exporter: refused before any Python starts, TensorFlow's included.
  expect_one_line_error(
      onnxproof_cli({"export", "--model", "keras:MobileNetV3Small", "--exporter", "dynamo", "--out", dir}), 2,
      "--exporter dynamo is a PyTorch exporter; keras:MobileNetV3Small is a TensorFlow model (its exporters: auto, "
      "tf2onnx, keras, both)");
  // Checked before Python starts: one line, exit 2, no progress (each once reached Python).
  const auto before_python = [&](std::vector<std::string> extra, const std::string& fragment) {
    std::vector<std::string> args = {"export", "--model", "torchvision:resnet18", "--input", "x=1x8:float32",
                                     "--out",  dir};
    args.insert(args.end(), extra.begin(), extra.end());
    expect_one_line_error(onnxproof_cli(args), 2, fragment);
  };
  before_python({"--opset", "99"}, "--opset 99 is newer than onnxproof can prove (ONNX Runtime " +
                                       locked_version("onnxruntime") + " runs up to");
  before_python({"--opset", "5"}, "the oldest opset is 7");
  before_python({"--dynamic", "x:0=a", "--dynamic", "x:0=b"}, "gives x:0 two labels, 'a' and 'b'");
  before_python({"--dynamic", "x:2=a"}, "'x' has 2 dimensions");
  before_python({"--dynamic", "x:0=batch", "--sweep", "seq=1,2"}, "--sweep seq: no --dynamic axis has that label");
  before_python({"--input", "y=999999999x999999999:float32"}, "is over 4 GiB");
  before_python({"--input", "s=4:string"}, "onnxproof cannot generate string inputs");
  before_python({"--data-dir", "/nonexistent"}, "--data-dir /nonexistent is not a folder");
  // A --sweep size is capped as an --input size is (the front end once tried to allocate 128 GiB).
  before_python({"--dynamic", "x:0=batch", "--sweep", "batch=1,99999999999"},
                "--sweep: input x at 99999999999x8 of float32 is over 4 GiB");
  expect_one_line_error(onnxproof_cli({"export", "--model", "torchvision:resnet18", "--input", "x=1x8:float32",
                                       "--data", "/nonexistent/data.py:samples", "--out", dir}),
                        3, "--data /nonexistent/data.py:samples: no such file: /nonexistent/data.py");
  expect_one_line_error(onnxproof_cli({"export", "--model", "torchvision:resnet18", "--input", "x=1x8:float32",
                                       "--python", "/nonexistent/python3", "--out", dir}),
                        2 + 1, "cannot run the Python interpreter '/nonexistent/python3'");
}

// A forward pass that never returns used to hang the export forever: --export-timeout ends it
// (the Python child included) with one clear line.
TEST(Export, HungForwardIsStoppedByTheTimeLimit) {
  TempDir out;
  const auto start = std::chrono::steady_clock::now();
  const auto result = onnxproof_cli({"export", "--model", k_traps + ":never_returns", "--input", "x=1x8:float32",
                                     "--export-timeout", "8", "--out", out.path().string()});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_error_after_progress(result, 3, "ran past its time limit of 8 s and was stopped");
  EXPECT_LT(seconds, 30.0);
  expect_one_line_error(onnxproof_cli({"export", "--model", k_traps + ":never_returns", "--input", "x=1x8:float32",
                                       "--export-timeout", "0", "--out", out.path().string()}),
                        2, "--export-timeout must be a positive number of seconds");
}

// SIGTERM to onnxproof during the export ends the Python child too (it used to keep running).
TEST(Export, TerminatingOnnxproofEndsThePythonChild) {
  TempDir out;
  const auto result =
      run_cli("/usr/bin/timeout", {"-s", "TERM", "6", ONNXPROOF_CLI, "export", "--model", k_traps + ":never_returns",
                                   "--input", "x=1x8:float32", "--out", out.path().string()});
  EXPECT_EQ(result.exit_code, 124);  // timeout(1): the command was terminated
  std::this_thread::sleep_for(std::chrono::seconds(1));
  // The child's command line holds the configuration, with this run's --out in it.
  // ("[-]" keeps the pattern from matching the shell that runs pgrep.)
  const std::string look = "pgrep -f -- '[-]-config-json.*" + out.path().string() + "' >/dev/null";
  EXPECT_NE(std::system(look.c_str()), 0) << "a front end process for " << out.path() << " is still running";
}

TEST(Export, InterpreterWithoutTorchIsOneClearLine) {
  TempDir out;
  TempDir fake;
  // A Python with the standard library but none of torch, onnx, numpy: -S keeps Debian's
  // dist-packages off the path.
  write_bytes(fake / "python", "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
  fs::permissions(fake / "python", fs::perms::owner_all);
  const auto result = onnxproof_cli({"export", "--model", "torchvision:resnet18", "--input", "x=1x3x8x8:float32",
                                     "--python", (fake / "python").string(), "--out", out.path().string()});
  expect_error_after_progress(result, 3, "the export front end needs onnx and numpy, with torch for PyTorch models");
}

// An --input the model itself refuses is the call's mistake (exit 2, one line naming the input and
// PyTorch's words), not a failed export.
TEST(Export, WrongInputShapeForTheModelIsAUsageErrorWithAHint) {
  TempDir out;
  const auto result = onnxproof_cli({"export", "--model", k_traps + ":lstm", "--input", "x=2x5x3:float32", "--samples",
                                     "1", "--out", (out / "run").string()});
  expect_error_after_progress(result, 2,
                              "the model's forward rejects the example input (x 2x5x3 float32): RuntimeError");
  EXPECT_NE(result.err.find("check the --input names, shapes and dtypes"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out / "run" / "model.onnx"));
}

}  // namespace
