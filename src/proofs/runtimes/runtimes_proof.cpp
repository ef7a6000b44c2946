// The proof on other runtime releases (--target ort-cpu@VERSION, openvino@VERSION): the model
// proved again on each release named, each in a child of this binary with the release's library
// (pipeline/runtime_versions.h, runtime_versions.cpp here), one slice: this step, its typed
// result and its run-folder entry (runtimes/, core/run_layout.h).
#include "runtimes_proof.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <string>
#include <vector>

#include "onnxproof/model/model_io.h"

namespace onnxproof {

nlohmann::json RuntimesFigures::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& proof : releases) list.push_back(release_proof_to_json(proof));
  return {{"releases", list}};
}

}  // namespace onnxproof

namespace onnxproof::pipeline_run {

namespace {

// Each release named proved in turn; one line says which load and match the model: "loads and matches
// on 1.22.1, 1.31.1; 1.18.0 refuses it: opset 23 is above the 21 it runs".
StepReport runtimes_step(Run& run) {
  StepReport step{.name = "runtimes"};
  auto model = load_model(run.model);
  if (!model) return step_error(step, model.error());
  const int opset = default_domain_opset(model->proto);
  const int ir_version = static_cast<int>(model->proto.ir_version());
  auto figures = std::make_shared<RuntimesFigures>();
  std::vector<std::string> matched, refused, failed, errors;
  for (const auto& release : run.options.releases) {
    const std::string folder = (release.openvino ? "openvino-" : "") + release.version;
    auto proof = prove_on_release(release, run.model, opset, ir_version, run.out / "reference",
                                  run.out / "runtimes" / folder, run.options.release_proof, run.progress);
    add_findings(run, proof.findings);
    // ONNX Runtime's releases by their number, as before; OpenVINO's named.
    const std::string name = (release.openvino ? "OpenVINO " : "") + release.version;
    if (proof.outcome == "pass") matched.push_back(name);
    if (proof.outcome == "refused") refused.push_back(name + " refuses it: " + proof.reason);
    if (proof.outcome == "fail") failed.push_back(name + " loads it but does not match (see the findings)");
    if (proof.outcome == "error") errors.push_back(name + " could not be run: " + proof.reason);
    figures->releases.push_back(std::move(proof));
  }
  std::vector<std::string> said;
  if (!matched.empty()) said.push_back(fmt::format("loads and matches on {}", fmt::join(matched, ", ")));
  for (const auto* group : {&failed, &refused, &errors}) said.insert(said.end(), group->begin(), group->end());
  step.reason = fmt::format("{}", fmt::join(said, "; "));
  step.result = figures;
  step.status = !errors.empty()                     ? StepStatus::error
                : refused.empty() && failed.empty() ? StepStatus::pass
                                                    : StepStatus::fail;
  return step;
}

bool releases_wanted(const Run& run) { return !run.options.releases.empty(); }

}  // namespace

StepDefinition runtimes_proof() {
  return {"runtimes", runtimes_step,  "model, reference/, the releases", "runtimes/; the releases' findings",
          true,       releases_wanted};
}

}  // namespace onnxproof::pipeline_run
