// End-to-end tests of what the binary reads and writes: no output onto an input or into a folder
// it reads, no link followed out of a run or an export, no FIFO waited on, no evidence left unread.
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/tensor/tensor_io.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;
namespace fs = std::filesystem;

namespace {

CliResult onnxproof_cli(const std::vector<std::string>& args) { return run_cli(ONNXPROOF_CLI, args); }

// ---- Ownership, links, FIFOs and unread evidence (issue 25): each of these exited 0, hung, or
// copied a file from outside before.

Tensor floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return *Tensor::from_bytes(DType::float32, std::move(shape), std::move(bytes));
}

// matmul_model(4, 2) (y = x @ 0.5) at `model`, and beside it in `reference` one data set it
// passes: x = ones(1x4), y = [2, 2].
void write_matmul_and_reference(const fs::path& model, const fs::path& reference) {
  write_bytes(model, matmul_model(4, 2).SerializeAsString());
  const fs::path set = reference / "test_data_set_0";
  fs::create_directories(set);
  ASSERT_TRUE(write_tensor_pb(set / "input_0.pb", floats({1, 4}, {1, 1, 1, 1}), "x"));
  ASSERT_TRUE(write_tensor_pb(set / "output_0.pb", floats({1, 2}, {2, 2}), "y"));
}

// An export folder as onnxproof export writes it: model.onnx, export.json naming it, reference/.
void write_export_folder(const fs::path& folder) {
  fs::create_directories(folder);
  write_matmul_and_reference(folder / "model.onnx", folder / "reference");
  const std::string digest = *sha256_file(folder / "model.onnx");
  const nlohmann::json manifest = {{"schema", "onnxproof.export/1"},
                                   {"status", "exported"},
                                   {"exporter", "torchscript"},
                                   {"findings", nlohmann::json::array()},
                                   {"onnx_model", {{"path", "model.onnx"}, {"sha256", digest}}}};
  write_bytes(folder / "export.json", manifest.dump());
}

TEST(CliOwnership, NoOutputResolvesToAnInputOrIntoAFolderItReads) {
  TempDir dir;
  const fs::path reference = dir / "reference";
  write_matmul_and_reference(dir / "m.onnx", reference);
  const std::string model = (dir / "m.onnx").string();
  const fs::path pytorch_output = reference / "test_data_set_0" / "output_0.pb";
  const std::string pytorch_bytes = read_text(pytorch_output);
  ASSERT_EQ(onnxproof_cli({"parity", model, "--reference", reference.string()}).exit_code, 0);
  for (const fs::path& json : {pytorch_output, reference / "cases.json", reference / "test_data_set_0"})
    expect_one_line_error(onnxproof_cli({"parity", model, "--reference", reference.string(), "--json", json.string()}),
                          2, "refusing to write " + json.string() + " (--json)");
  fs::create_symlink(pytorch_output, dir / "link.json");  // a link into the reference is the reference
  expect_one_line_error(
      onnxproof_cli({"parity", model, "--reference", reference.string(), "--json", (dir / "link.json").string()}), 2,
      "an input of this command");
  expect_one_line_error(
      onnxproof_cli({"simplify", model, "--reference", reference.string(), "-o", (reference / "sim.onnx").string()}), 2,
      "it is inside " + reference.string() + ", an input of this command");
  // PyTorch's output_0.pb would become ONNX Runtime's, and parity then passes trivially.
  const fs::path set = reference / "test_data_set_0";
  expect_one_line_error(
      onnxproof_cli({"run", model, "--input", "x=" + (set / "input_0.pb").string(), "--output-dir", set.string()}), 2,
      "it holds output_0.pb, which no outputs.json of onnxproof run lists");
  expect_one_line_error(
      onnxproof_cli({"golden", "freeze", model, "--reference", reference.string(), "--out", reference.string()}), 2,
      "refusing to write " + reference.string() + " (--out): it is an input of this command");
  expect_one_line_error(
      onnxproof_cli({"golden", "freeze", model, "--reference", reference.string(), "--out", dir.path().string()}), 2,
      "it holds " + model + ", an input of this command");
  EXPECT_EQ(read_text(pytorch_output), pytorch_bytes);
  EXPECT_FALSE(fs::exists(reference / "cases.json"));
  EXPECT_FALSE(fs::exists(set / "outputs.json"));

  // check reads export.json beside the model: --json may not replace it.
  TempDir exported;
  write_export_folder(exported.path());
  const std::string manifest = read_text(exported / "export.json");
  expect_one_line_error(
      onnxproof_cli({"check", (exported / "model.onnx").string(), "--json", (exported / "export.json").string()}), 2,
      "it is an input of this command");
  // parity names the reference's source framework from the export.json above it: not a --json either.
  expect_one_line_error(
      onnxproof_cli({"parity", (exported / "model.onnx").string(), "--reference", (exported / "reference").string(),
                     "--json", (exported / "export.json").string()}),
      2, "it is an input of this command");
  EXPECT_EQ(read_text(exported / "export.json"), manifest);
  // A SavedModel folder is the export's input: the run folder may neither be nor hold it.
  fs::create_directories(exported / "saved" / "variables");
  expect_one_line_error(onnxproof_cli({"export", "--model", "saved_model:" + (exported / "saved").string(), "--out",
                                       (exported / "saved" / "run").string()}),
                        2, "an input of this command");
}

// --from-export never enters a folder or copies a file through a link: a reference/ linked
// elsewhere copied whatever lay there (a private key) into the run folder.
TEST(CliOwnership, FromExportRefusesLinksInsteadOfFollowingThem) {
  TempDir dir;
  const fs::path exported = dir / "export";
  write_export_folder(exported);
  const fs::path elsewhere = dir / "elsewhere";
  fs::rename(exported / "reference", elsewhere);
  write_bytes(elsewhere / "id_rsa", "PRIVATE KEY");
  fs::create_directory_symlink(elsewhere, exported / "reference");
  const fs::path out = dir / "run";
  const auto linked = onnxproof_cli({"pipeline", "--from-export", exported.string(), "--out", out.string()});
  expect_error_after_progress(linked, 3, (exported / "reference").string() + " is a symbolic link");
  EXPECT_FALSE(fs::exists(out / "reference" / "id_rsa"));

  fs::remove(exported / "reference");
  fs::rename(elsewhere, exported / "reference");
  fs::rename(exported / "model.onnx", dir / "model.onnx");
  fs::create_symlink(dir / "model.onnx", exported / "model.onnx");
  expect_error_after_progress(
      onnxproof_cli({"pipeline", "--from-export", exported.string(), "--out", (dir / "run2").string()}), 3,
      (exported / "model.onnx").string() + " is a symbolic link");
}

// A run folder is replaced whole when published: it may not hold the export it proves (the old
// run went, and the export with it), nor lie inside it.
TEST(CliOwnership, ARunFolderNeverHoldsNorLiesInTheExportItProves) {
  TempDir dir;
  const fs::path run = dir / "run";
  write_export_folder(run / "export");
  write_bytes(run / "report.json", "{}");  // an earlier run
  expect_error_after_progress(
      onnxproof_cli({"pipeline", "--from-export", (run / "export").string(), "--out", run.string()}), 2,
      "refusing to write " + run.string() + " (--out): it holds " + (run / "export").string());
  EXPECT_TRUE(fs::exists(run / "export" / "model.onnx"));
  expect_error_after_progress(onnxproof_cli({"pipeline", "--from-export", (run / "export").string(), "--out",
                                             (run / "export" / "inner").string()}),
                              2, "it is inside " + (run / "export").string());
  EXPECT_FALSE(fs::exists(run / "export" / "inner"));
  // So with --data-dir: the samples are read, the run folder replaced would take them along.
  fs::create_directories(run / "data" / "sample_0");
  write_bytes(run / "data" / "sample_0" / "x.npy", "mine");
  expect_one_line_error(onnxproof_cli({"pipeline", "--model", "torchvision:resnet18", "--data-dir",
                                       (run / "data").string(), "--out", run.string()}),
                        2, "it holds " + (run / "data").string());
  EXPECT_EQ(read_text(run / "data" / "sample_0" / "x.npy"), "mine");
}

// localize reads a run folder's report and reference as the folder's own, never through a link.
TEST(CliOwnership, LocalizeRefusesLinksInTheRunFolder) {
  TempDir dir;
  fs::create_directories(dir / "run");
  write_bytes(dir / "report.json", R"({"parity": []})");
  fs::create_symlink(dir / "report.json", dir / "run" / "report.json");
  expect_one_line_error(onnxproof_cli({"localize", (dir / "run").string(), "--captured"}), 3,
                        (dir / "run" / "report.json").string() + " is a symbolic link");
  fs::remove(dir / "run" / "report.json");
  fs::rename(dir / "report.json", dir / "run" / "report.json");
  fs::create_directories(dir / "elsewhere" / "test_data_set_0");
  fs::create_directory_symlink(dir / "elsewhere", dir / "run" / "reference");
  expect_one_line_error(onnxproof_cli({"localize", (dir / "run").string(), "--captured", "--case", "test_data_set_0"}),
                        3, (dir / "run" / "reference").string() + " is a symbolic link");
}

// Every file read is checked to be a regular file before it is opened: a FIFO as model.onnx
// made --from-export wait forever (the timeout turns a hang into exit 124).
TEST(CliOwnership, FifoInAnExportIsRefusedNotWaitedOn) {
  TempDir dir;
  const fs::path exported = dir / "export";
  write_export_folder(exported);
  fs::remove(exported / "model.onnx");
  ASSERT_EQ(::mkfifo((exported / "model.onnx").c_str(), 0600), 0);
  const auto result = run_cli("/usr/bin/timeout", {"60", ONNXPROOF_CLI, "pipeline", "--from-export", exported.string(),
                                                   "--out", (dir / "run").string()});
  expect_error_after_progress(result, 3, (exported / "model.onnx").string() + " is not a regular file");
  expect_one_line_error(run_cli("/usr/bin/timeout", {"60", ONNXPROOF_CLI, "check", (exported / "model.onnx").string()}),
                        3, "is not a regular file");
}

// A second file for one output (or one past a gap in the numbers) was never compared and the
// verdict passed; now the reader refuses the data set.
TEST(CliOwnership, ReferenceEvidenceIsNeverLeftUnread) {
  TempDir dir;
  const fs::path reference = dir / "reference";
  write_matmul_and_reference(dir / "m.onnx", reference);
  const std::string model = (dir / "m.onnx").string();
  const fs::path set = reference / "test_data_set_0";
  ASSERT_TRUE(write_tensor_pb(set / "output_1.pb", floats({1, 2}, {9, 9}), "y"));
  expect_one_line_error(onnxproof_cli({"parity", model, "--reference", reference.string()}), 3,
                        (set / "output_0.pb").string() + " and " + (set / "output_1.pb").string() + " both hold 'y'");
  fs::remove(set / "output_1.pb");
  ASSERT_TRUE(write_tensor_pb(set / "output_5.pb", floats({1, 2}, {9, 9}), "z"));
  expect_one_line_error(onnxproof_cli({"parity", model, "--reference", reference.string()}), 3,
                        (set / "output_5.pb").string() + " would never be read: output_1.pb is missing");
  fs::remove(set / "output_5.pb");

  // A golden set with two files for one output, the manifest's digests made to agree.
  const fs::path golden = dir / "golden";
  ASSERT_EQ(
      onnxproof_cli({"golden", "freeze", model, "--reference", reference.string(), "--out", golden.string()}).exit_code,
      0);
  ASSERT_TRUE(write_tensor_pb(golden / "test_data_set_0" / "output_1.pb", floats({1, 2}, {9, 9}), "y"));
  auto manifest = nlohmann::json::parse(read_text(golden / "manifest.json"));
  manifest["files"]["test_data_set_0/output_1.pb"] = *sha256_file(golden / "test_data_set_0" / "output_1.pb");
  write_bytes(golden / "manifest.json", manifest.dump());
  expect_one_line_error(onnxproof_cli({"golden", "verify", model, "--golden", golden.string()}), 3,
                        "output_1.pb both hold 'y'");
}

}  // namespace
