#include "onnxproof/golden/golden.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "onnxproof/contract/cases.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/numbered_name.h"
#include "onnxproof/core/run_folder.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_schema = "onnxproof.golden/1";

// What the manifest records of the model beside its file's digest, from one load without the
// weights: its opset imports, and the sha256 of each external data file it names (by name in its
// folder: the weights a large model keeps beside model.onnx are as much the model as its graph).
struct ModelRecord {
  nlohmann::json opsets = nlohmann::json::object();
  nlohmann::json data = nlohmann::json::object();
};

Expected<ModelRecord> model_record(const fs::path& model_path) {
  ModelRecord record;
  auto model = load_model(model_path);
  if (!model) return record;  // the proof has said why already: nothing more to record
  for (const auto& opset : model->proto.opset_import()) {
    record.opsets[opset.domain().empty() ? "ai.onnx" : opset.domain()] = opset.version();
  }
  for (const auto& file : model->external_files) {
    ONNXPROOF_TRY_ASSIGN(const std::string digest, sha256_file(file));
    record.data[fs::relative(file, model->folder).generic_string()] = digest;
  }
  return record;
}

// Where the frozen outputs come from: the proof's own CPU session (ParityResult::cpu_outputs) when
// it ran every case, so the model is not run twice on the same inputs; else a session opened here.
class FrozenOutputs {
 public:
  static Expected<FrozenOutputs> open(const fs::path& model, const Reference& reference, const ParityResult* proof,
                                      const std::vector<std::string>& disabled_optimizers) {
    FrozenOutputs result;
    const bool proof_has_all = proof && !proof->cpu_output_names.empty() &&
                               std::all_of(reference.cases.begin(), reference.cases.end(), [&](const ReferenceCase& c) {
                                 return proof->cpu_outputs.contains(c.data_set);
                               });
    if (proof_has_all) {
      result.m_proof = proof;
      result.m_input_names = proof->cpu_input_names;
      result.m_output_names = proof->cpu_output_names;
      return result;
    }
    const SessionOptions options{.provider = "cpu", .disabled_optimizers = disabled_optimizers};
    auto session = Session::open(model, lean_for_large_model(model, options));
    if (!session) return std::unexpected(std::move(session.error()));
    for (const auto& value : session->inputs()) result.m_input_names.push_back(value.name);
    for (const auto& value : session->outputs()) result.m_output_names.push_back(value.name);
    result.m_session.emplace(std::move(*session));
    return result;
  }
  const std::vector<std::string>& input_names() const { return m_input_names; }
  const std::vector<std::string>& output_names() const { return m_output_names; }
  // The case's outputs in output_names() order: borrowed from the proof, or run now into `scratch`.
  Expected<const std::vector<Tensor>*> outputs(const ReferenceCase& c, std::vector<Tensor>& scratch) {
    if (m_proof) return &m_proof->cpu_outputs.at(c.data_set);
    ONNXPROOF_TRY_ASSIGN(scratch, run_case(*m_session, c));
    return &scratch;
  }

 private:
  const ParityResult* m_proof = nullptr;
  std::optional<Session> m_session;
  std::vector<std::string> m_input_names, m_output_names;
};

Expected<void> write_data_sets(const fs::path& model, const Reference& reference, const fs::path& folder,
                               nlohmann::json& files, nlohmann::json& tolerances, const ParityOptions& parity,
                               const ParityResult* proof) {
  const ToleranceOptions& tolerance = parity.tolerance;
  ONNXPROOF_TRY_ASSIGN(auto source, FrozenOutputs::open(model, reference, proof, parity.disabled_optimizers));
  contract::CasesDocument manifest{.schema = std::string(contract::k_cases_version),
                                   .dynamic_axes = reference.example_sizes,
                                   .cases = std::vector<contract::CasesEntry>{}};
  // Detection sets travel with the frozen outputs: verification matches them as sets too.
  if (!reference.detection_sets.empty()) {
    manifest.detections.emplace();
    for (const auto& set : reference.detection_sets) {
      manifest.detections->push_back({.boxes = set.boxes,
                                      .scores = set.scores,
                                      .labels = set.labels,
                                      .extra = set.extra,
                                      .score_threshold = set.score_threshold});
    }
  }
  // A random forward's outputs stay unproved value by value when verified, as when proved.
  if (!reference.random_outputs.empty()) {
    manifest.random_outputs.emplace();
    for (const auto& [name, cause] : reference.random_outputs) manifest.random_outputs->push_back(name);
  }
  for (const auto& c : reference.cases) {
    const fs::path set = folder / c.data_set;
    fs::create_directories(set);
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
      const std::string name = c.inputs[i].name.empty() ? source.input_names().at(i) : c.inputs[i].name;
      ONNXPROOF_TRY(write_tensor_pb(set / fmt::format("input_{}.pb", i), c.inputs[i].tensor, name));
    }
    std::vector<Tensor> ran;
    ONNXPROOF_TRY_ASSIGN(const std::vector<Tensor>* outputs_pointer, source.outputs(c, ran));
    const std::vector<Tensor>& outputs = *outputs_pointer;
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const auto& name = source.output_names().at(k);
      ONNXPROOF_TRY(write_tensor_pb(set / fmt::format("output_{}.pb", k), outputs[k], name));
      // The float64 reference travels with the frozen outputs: verification judges a new export
      // by the calibrated rule, with the frozen run's distance from exact as the noise.
      if (const Tensor* exact = exact_output(c, name, k)) {
        ONNXPROOF_TRY(write_tensor_pb(set / fmt::format("exact_output_{}.pb", k), *exact, name));
      }
      const Tolerance t = tolerance.resolve(name, outputs[k].dtype());
      // "default": verification decides by the rule in force then (calibrated where the exact
      // outputs are here); "user": the figures the user gave at freeze time hold.
      tolerances[name] = {
          {"rtol", t.rtol}, {"atol", t.atol}, {"rule", tolerance.overridden(name) ? "user" : "default"}};
    }
    manifest.cases->push_back({.data_set = c.data_set, .sizes = c.sizes, .sample = c.sample, .source = c.source});
  }
  ONNXPROOF_TRY(write_file_atomically(
      folder / "cases.json",
      contract::write_cases(manifest).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    ONNXPROOF_TRY_ASSIGN(const std::string digest, sha256_file(entry.path()));
    files[fs::relative(entry.path(), folder).string()] = digest;
  }
  return {};
}

}  // namespace

bool VerifyResult::passed() const { return parity.passed() && !has_errors(findings); }

namespace {

// The folder of a golden set holding a frozen generation proof.
constexpr std::string_view k_generation_folder = "generation";

// The loosest tolerances a manifest may carry; looser ones must come from the command line.
constexpr double k_max_manifest_rtol = 0.5;
constexpr double k_max_manifest_atol = 1.0;

// As many data sets as a --data source may yield (10,000) and then some.
constexpr int64_t k_max_data_sets = 100000;

// A manifest is untrusted input: its entries must be plain names of regular files inside the
// golden folder, and they must be exactly the data sets' files, so nothing outside is read, no
// FIFO or device is opened, and no data set is dropped or slipped in.
Expected<void> check_manifest_files(const fs::path& golden_dir, const nlohmann::json& manifest) {
  const auto bad = [&](const std::string& why) {
    return fail(ErrorCode::invalid_input, (golden_dir / "manifest.json").string() + ": " + why);
  };
  const nlohmann::json& files = manifest.at("files");
  if (!files.is_object() || files.empty()) return bad("it lists no files");
  std::set<std::string> listed;
  std::error_code root_ec;
  const std::string root = fs::weakly_canonical(golden_dir, root_ec).string() + "/";
  for (const auto& [relative, digest] : files.items()) {
    const fs::path path(relative);
    const bool plain = !path.empty() && path.is_relative() &&
                       std::none_of(path.begin(), path.end(), [](const fs::path& part) { return part == ".."; });
    if (!plain || !digest.is_string()) return bad("entry '" + relative + "' is not a plain name inside the folder");
    std::error_code ec;
    const auto type = fs::symlink_status(golden_dir / path, ec).type();
    if (type != fs::file_type::regular && type != fs::file_type::not_found)
      return bad("entry '" + relative + "' is not a regular file");
    // A folder on the way may be a symlink out of the golden folder: compare the real paths.
    if (!fs::weakly_canonical(golden_dir / path, ec).string().starts_with(root))
      return bad("entry '" + relative + "' leads outside the folder");
    listed.insert(path.lexically_normal().string());
  }
  // A count, not any number: 1e26 converted to int was undefined behaviour (found by fuzzing).
  const auto& count = manifest.at("data_sets");
  if (!count.is_number_integer() || count.get<int64_t>() < 1 || count.get<int64_t>() > k_max_data_sets)
    return bad("data_sets is not a count of data sets (1 to " + std::to_string(k_max_data_sets) + ")");
  const int data_sets = static_cast<int>(count.get<int64_t>());
  std::set<std::string> present;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(golden_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("test_data_set_")) continue;
    const auto number = number_after(name, "test_data_set_");
    if (!number || *number >= static_cast<uint64_t>(std::max(data_sets, 0)))
      return bad(name + " is not one of the " + std::to_string(data_sets) + " data sets the manifest records");
    for (const auto& file : fs::directory_iterator(entry.path(), ec)) {
      if (file.path().extension() == ".pb") present.insert(name + "/" + file.path().filename().string());
    }
  }
  // A frozen generation: every entry a folder or a regular file the manifest lists, never a link.
  const auto generation_type = fs::symlink_status(golden_dir / k_generation_folder, ec).type();
  if (generation_type != fs::file_type::not_found && generation_type != fs::file_type::directory)
    return bad(std::string(k_generation_folder) + " is not a folder");
  if (generation_type == fs::file_type::directory) {
    for (auto it = fs::recursive_directory_iterator(golden_dir / k_generation_folder, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const auto type = it->symlink_status(ec).type();
      const std::string name = fs::relative(it->path(), golden_dir, ec).lexically_normal().string();
      if (type == fs::file_type::directory) continue;
      if (type != fs::file_type::regular) return bad(name + " is not a regular file");
      present.insert(name);
    }
    if (ec) return bad("cannot list its generation/ folder: " + ec.message());
  }
  for (const auto& file : present) {
    if (!listed.contains(file)) return bad(file + " is in the folder but not in the manifest");
  }
  for (int k = 0; k < data_sets; ++k) {
    const std::string prefix = "test_data_set_" + std::to_string(k) + "/";
    const bool has_any =
        std::any_of(listed.begin(), listed.end(), [&](const std::string& name) { return name.starts_with(prefix); });
    if (!has_any) return bad("data set " + std::to_string(k) + " has no files listed");
  }
  return {};
}

// What a golden set holds: its manifest, cases.json, test_data_set_N/, generation/ (a frozen
// generation proof), and the temporaries of a killed freeze (".manifest.json.tmp.XXXXXX").
bool is_golden_entry(std::string_view name, bool is_folder) {
  if (is_folder) return number_after(name, "test_data_set_").has_value() || name == k_generation_folder;
  return name == "manifest.json" || name == "cases.json" || name.starts_with(".manifest.json.tmp.") ||
         name.starts_with(".cases.json.tmp.");
}

// The generation reference (generation.json and its run folders) copied into golden/generation/,
// each file listed with its sha256 like the data sets' files.
Expected<void> freeze_generation(const fs::path& reference, const fs::path& staging, nlohmann::json& files) {
  std::error_code ec;
  fs::copy(reference, staging / k_generation_folder, fs::copy_options::recursive, ec);
  if (ec) return fail(ErrorCode::io, "cannot copy " + reference.string() + " into the golden set: " + ec.message());
  for (const auto& entry : fs::recursive_directory_iterator(staging / k_generation_folder, ec)) {
    if (!entry.is_regular_file()) continue;
    ONNXPROOF_TRY_ASSIGN(const std::string digest, sha256_file(entry.path()));
    files[fs::relative(entry.path(), staging).string()] = digest;
  }
  if (ec) return fail(ErrorCode::io, "cannot list the frozen generation: " + ec.message());
  return {};
}

// The frozen generation proved again on `model` (its encoder read beside it, whatever its digest:
// a new export's encoder is what is verified); its failures are drift.
Expected<void> verify_generation(const fs::path& model, const fs::path& golden_dir, const GoldenOptions& options,
                                 VerifyResult& result) {
  const fs::path frozen = golden_dir / k_generation_folder;
  SessionOptions session{.provider = "cpu",
                         .intra_op_threads = options.parity.intra_op_threads,
                         .disabled_optimizers = options.parity.disabled_optimizers};
  ONNXPROOF_TRY_ASSIGN(result.generation, prove_generation(model, model.parent_path(), frozen, session,
                                                           options.parity.tolerance, "", EncoderDigest::ignore));
  for (const auto& run : result.generation) {
    for (auto finding : run.findings) {
      if (finding.severity == Severity::error) {
        finding.message = "against the golden generation: " + finding.message;
        finding.code = FindingCode::golden_drift;
      }
      finding.step = "golden";
      result.findings.push_back(std::move(finding));
    }
  }
  return {};
}

}  // namespace

// onnxproof replaces only what it made: a golden folder (its manifest says so), an empty folder,
// or nothing. A project folder, the run folder, the reference or a file is refused, before any work.
Expected<void> require_replaceable_golden_folder(const fs::path& golden_dir, std::string_view option) {
  std::error_code ec;
  const auto status = fs::symlink_status(golden_dir, ec);
  if (ec || status.type() == fs::file_type::not_found) return {};
  const auto refuse = [&](const std::string& why) {
    return fail(ErrorCode::usage, "refusing to replace " + golden_dir.string() + ": " + why + "; give " +
                                      std::string(option) + " a new folder, an empty one, or an earlier golden folder");
  };
  if (status.type() != fs::file_type::directory) return refuse("it is not a folder");
  if (fs::is_empty(golden_dir, ec)) return {};
  // A golden manifest dropped into a project folder does not make the project ours.
  if (auto foreign = first_foreign_entry(golden_dir, is_golden_entry))
    return refuse("it holds '" + *foreign + "', which a golden set never holds");
  const fs::path manifest = golden_dir / "manifest.json";
  auto text = read_file(manifest, uint64_t{64} << 20);
  if (!text) return refuse("it is not empty and has no golden manifest.json");
  try {
    if (nlohmann::json::parse(*text).value("schema", "") == k_schema) return {};
  } catch (const nlohmann::json::exception&) {
  }
  return refuse("its manifest.json is not an " + std::string(k_schema) + " manifest");
}

Expected<FreezeResult> freeze_golden(const fs::path& model, const Reference& reference, const fs::path& golden_dir,
                                     const GoldenOptions& options, ParityResult* proof) {
  ONNXPROOF_TRY(require_replaceable_golden_folder(golden_dir));
  FreezeResult result;
  if (proof) {
    // The kept outputs are taken, not copied: a copy of every case's tensors would double the
    // memory a large model's freeze needs.
    auto outputs = std::exchange(proof->cpu_outputs, {});
    result.parity = *proof;
    result.parity.cpu_outputs = std::move(outputs);
  } else {
    ParityOptions parity = options.parity;
    parity.keep_cpu_outputs = true;  // written below instead of running the model again
    ONNXPROOF_TRY_ASSIGN(result.parity, run_parity(model, reference, parity));
  }
  if (!result.parity.passed()) return result;  // never freeze outputs that are not proved

  // Built out of sight, published in one step: removed on failure or SIGINT, never half there.
  ONNXPROOF_TRY_ASSIGN(auto staging_folder, StagingFolder::create(golden_dir));
  const fs::path& staging = staging_folder.path();
  nlohmann::json files = nlohmann::json::object();
  nlohmann::json tolerances = nlohmann::json::object();
  // The outputs written are the proof's own (its CPU session, all optimizations): not run again.
  ONNXPROOF_TRY(write_data_sets(model, reference, staging, files, tolerances, options.parity, &result.parity));
  result.parity.cpu_outputs.clear();
  if (!options.generation.empty()) ONNXPROOF_TRY(freeze_generation(options.generation, staging, files));
  ONNXPROOF_TRY_ASSIGN(const std::string model_digest, sha256_file(model));
  ONNXPROOF_TRY_ASSIGN(const ModelRecord record, model_record(model));
  nlohmann::json versions = nlohmann::json::object();
  for (const auto& [tool, version] : options.versions) versions[tool] = version;
  nlohmann::json manifest = {{"schema", k_schema},
                             {"model_sha256", model_digest},
                             {"opset_imports", record.opsets},
                             {"outputs_from", "onnxruntime cpu, all graph optimizations"},
                             {"tolerances", tolerances},
                             {"versions", versions},
                             {"data_sets", static_cast<int>(reference.cases.size())},
                             {"files", files}};
  if (!record.data.empty()) manifest["model_data_sha256"] = record.data;
  ONNXPROOF_TRY(write_file_atomically(staging / "manifest.json",
                                      manifest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  ONNXPROOF_TRY(staging_folder.publish());
  result.frozen = true;
  result.data_sets = static_cast<int>(reference.cases.size());
  return result;
}

Expected<GoldenManifest> read_golden_manifest(const fs::path& golden_dir, const ToleranceOptions& overrides) {
  const fs::path manifest_path = golden_dir / "manifest.json";
  if (!fs::exists(manifest_path)) {
    return fail(ErrorCode::invalid_input, golden_dir.string() + " is not a golden folder: manifest.json is missing");
  }
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json manifest, read_json_object(manifest_path, ErrorCode::invalid_input));
  GoldenManifest result{overrides, "", {}, false};
  try {
    result.model_sha256 = manifest.value("model_sha256", "");
    if (manifest.contains("model_data_sha256")) result.model_data_sha256 = manifest.at("model_data_sha256");
    if (manifest.value("schema", "") != k_schema) {
      return fail(ErrorCode::invalid_input,
                  manifest_path.string() + " is not an " + std::string(k_schema) + " manifest");
    }
    ONNXPROOF_TRY(check_manifest_files(golden_dir, manifest));
    result.generation = manifest.at("files").contains(std::string(k_generation_folder) + "/generation.json");
    for (const auto& [relative, digest] : manifest.at("files").items()) {
      const fs::path file = golden_dir / relative;
      if (!fs::exists(file)) return fail(ErrorCode::invalid_input, "golden file " + file.string() + " is missing");
      ONNXPROOF_TRY_ASSIGN(const std::string actual, sha256_file(file));
      if (actual != digest.get<std::string>()) {
        return fail(ErrorCode::invalid_input, "golden file " + file.string() +
                                                  " was modified after the freeze (sha256 " + actual.substr(0, 12) +
                                                  ", manifest " + digest.get<std::string>().substr(0, 12) + ")");
      }
    }
    // The recorded tolerances hold unless the caller overrides them explicitly.
    for (const auto& [output, t] : manifest.at("tolerances").items()) {
      if (result.tolerance.per_output.contains(output)) continue;
      const Tolerance recorded{t.at("rtol"), t.at("atol")};
      if (!(recorded.rtol >= 0 && recorded.rtol <= k_max_manifest_rtol && recorded.atol >= 0 &&
            recorded.atol <= k_max_manifest_atol)) {
        return fail(ErrorCode::invalid_input,
                    manifest_path.string() + ": the tolerance recorded for '" + output + "' (rtol " +
                        std::to_string(recorded.rtol) + ", atol " + std::to_string(recorded.atol) +
                        ") is looser than a manifest may set (rtol <= 0.5, atol <= 1); pass it with "
                        "--output-tolerance to use it");
      }
      // Manifests from before the calibrated rule carry no "rule": their figures hold as recorded.
      if (t.value("rule", "user") == "default") continue;
      result.tolerance.per_output[output] = recorded;
    }
  } catch (const nlohmann::json::exception& error) {
    return fail(ErrorCode::invalid_input, manifest_path.string() + " is malformed: " + error.what());
  }
  return result;
}

Expected<VerifyResult> verify_golden(const fs::path& model, const fs::path& golden_dir, const GoldenOptions& options) {
  recover_interrupted_publish(golden_dir);  // a freeze killed between its two renames: the old set comes back
  ONNXPROOF_TRY_ASSIGN(const GoldenManifest manifest, read_golden_manifest(golden_dir, options.parity.tolerance));
  ONNXPROOF_TRY_ASSIGN(const Reference golden, read_reference(golden_dir));
  ParityOptions parity = options.parity;
  parity.tolerance = manifest.tolerance;
  VerifyResult result;
  ONNXPROOF_TRY_ASSIGN(result.parity, run_parity(model, golden, parity));
  ONNXPROOF_TRY_ASSIGN(const std::string model_digest, sha256_file(model));
  result.model_changed = model_digest != manifest.model_sha256;
  if (result.model_changed) {
    result.findings.push_back({FindingCode::golden_drift, Severity::info, "golden",
                               "the model file changed since the freeze (sha256 " + model_digest.substr(0, 12) +
                                   ", frozen " + manifest.model_sha256.substr(0, 12) + "); its outputs are what counts",
                               model.string(), ""});
  } else if (manifest.model_data_sha256 && !manifest.model_data_sha256->empty()) {
    // Read only where the freeze recorded external data (an unchanged model.onnx names the same
    // files): a model without any is not parsed again here.
    ONNXPROOF_TRY_ASSIGN(const ModelRecord record, model_record(model));
    if (record.data != *manifest.model_data_sha256) {
      result.model_changed = true;
      result.findings.push_back({FindingCode::golden_drift, Severity::info, "golden",
                                 "the model's external data changed since the freeze (model.onnx did not); its "
                                 "outputs are what counts",
                                 model.string(), ""});
    }
  }
  // The proof's findings against frozen outputs are drift: rename them so the report says so.
  for (auto finding : result.parity.findings) {
    if (finding.code == FindingCode::parity_mismatch || finding.code == FindingCode::argmax_flip ||
        finding.code == FindingCode::nan_or_inf) {
      finding.message = "against the golden outputs: " + finding.message;
      finding.code = FindingCode::golden_drift;
      finding.hint =
          "an export, opset, framework or runtime change (or new weights) shifted the outputs; if the "
          "change is intended, delete " +
          golden_dir.string() + " and prove again (the next run freezes a new golden set); otherwise find what changed";
    }
    finding.step = "golden";
    result.findings.push_back(std::move(finding));
  }
  result.parity.findings.clear();
  if (manifest.generation) ONNXPROOF_TRY(verify_generation(model, golden_dir, options, result));
  return result;
}

}  // namespace onnxproof
