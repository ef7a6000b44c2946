// onnxproof's command line: turns argv into each workflow's options (CLI11), calls the workflow,
// prints its outcome and maps it to the exit code (DESIGN.md: 0 pass, 1 the proof failed, 2 usage
// error, 3 the tool could not run). Every workflow lives in the library (onnxproof/workflow/).
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include "onnxproof/core/installation.h"
#include "onnxproof/core/printable_stream.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/runtime/library_choice.h"
#include "onnxproof/workflow/present.h"
#include "option_groups.h"

namespace {
using namespace onnxproof;
using namespace onnxproof::cli;

// Prints "onnxproof: error: ..." as one line and returns the exit code for the error.
int report_error(const Error& error) {
  std::cerr << "onnxproof: error: " << error.describe() << '\n';
  return exit_code(error);
}

// The one place an outcome becomes an exit code: its summary on stdout, then its error, if any.
template <typename Result>
int present(const Expected<Outcome<Result>>& outcome) {
  if (!outcome) return report_error(outcome.error());
  print_outcome(std::cout, *outcome);
  return outcome->error ? report_error(*outcome->error) : exit_code(outcome->verdict);
}

// A parsed subcommand and the call that runs it.
struct Command {
  CLI::App* parsed;
  std::function<int()> run;
};
// In dispatch order: a nested subcommand (ops probe, golden freeze) before its parent.
using Commands = std::vector<Command>;

void add_check(CLI::App& app, Commands& commands) {
  auto check = std::make_shared<CheckCommand>();
  auto* check_app =
      app.add_subcommand("check", "Run the ONNX checker and strict shape inference, and summarize the model");
  check_app->add_option("model", check->model, "The .onnx file")->required();
  check_app->add_option("--json", check->json_path, "Also write the result as JSON to this file");
  check_app->add_option("--min-opset", check->min_opset, "Report OPSET_TOO_OLD below this ai.onnx opset")
      ->capture_default_str();
  check_app->add_option("--dynamic", check->dynamic,
                        "NAME:AXIS=LABEL, an axis that must stay dynamic (export.json beside the model is read too)");
  commands.push_back({check_app, [check] { return present(check_workflow(*check)); }});
}

void add_run(CLI::App& app, Commands& commands) {
  auto run = std::make_shared<RunCommand>();
  auto* run_app = app.add_subcommand("run", "Run the model with ONNX Runtime and write every output");
  run_app->add_option("model", run->model, "The .onnx file")->required();
  run_app->add_option("--input", run->inputs, "NAME=FILE with FILE a TensorProto .pb or a .npy (repeat per input)");
  run_app
      ->add_option("--output-dir", run->output_dir,
                   "Folder for output_K.pb (or .npy) and outputs.json: new, empty, or one an earlier run wrote")
      ->required();
  run_app->add_option("--provider", run->provider, "Execution provider: cpu or cuda")->capture_default_str();
  run_app->add_option("--format", run->format, "Output file format: pb or npy")->capture_default_str();
  commands.push_back({run_app, [run] { return present(run_workflow(*run)); }});
}

void add_parity(CLI::App& app, Commands& commands) {
  auto parity = std::make_shared<ParityCommand>();
  auto* parity_app =
      app.add_subcommand("parity", "Prove that ONNX Runtime matches the reference outputs (PyTorch's, TensorFlow's)");
  parity_app->add_option("model", parity->model, "The .onnx file")->required();
  parity_app->add_option("--reference", parity->reference, "Folder of test_data_set_N/ (OUT/reference)")->required();
  add_proof_options(parity_app, parity->proof);
  add_precision_option(parity_app, parity->proof);
  parity_app->add_option("--python", parity->python,
                         "Python interpreter for --precision fp16's conversion (default: $ONNXPROOF_PYTHON, else the "
                         "pinned .venv/bin/python)");
  parity_app->add_option("--json", parity->json_path, "Also write the result as JSON to this file");
  commands.push_back({parity_app, [parity] { return present(parity_workflow(*parity, std::cerr)); }});
}

void add_golden(CLI::App& app, Commands& commands) {
  auto* golden_app = app.add_subcommand("golden", "Freeze proved inputs and outputs, or verify a model against them");
  golden_app->require_subcommand(1);
  auto freeze = std::make_shared<GoldenFreezeCommand>();
  auto* freeze_app = golden_app->add_subcommand("freeze", "Prove parity, then freeze inputs and ONNX Runtime outputs");
  freeze_app->add_option("model", freeze->model, "The .onnx file")->required();
  freeze_app->add_option("--reference", freeze->reference, "The reference data (OUT/reference)")->required();
  freeze_app
      ->add_option("--out", freeze->out, "The golden folder to write (new, empty, or a golden folder it replaces)")
      ->required();
  add_proof_options(freeze_app, freeze->proof);
  auto verify = std::make_shared<GoldenVerifyCommand>();
  auto* verify_app =
      golden_app->add_subcommand("verify", "Re-run the golden inputs and compare with the frozen outputs");
  verify_app->add_option("model", verify->model, "The .onnx file")->required();
  verify_app->add_option("--golden", verify->golden, "The golden folder")->required();
  add_proof_options(verify_app, verify->proof);
  commands.push_back({freeze_app, [freeze] { return present(golden_freeze_workflow(*freeze)); }});
  commands.push_back({verify_app, [verify] { return present(golden_verify_workflow(*verify)); }});
}

void add_pipeline(CLI::App& app, Commands& commands) {
  auto pipeline = std::make_shared<PipelineCommand>();
  auto* pipeline_app =
      app.add_subcommand("pipeline", "Export, check, prove parity and freeze golden data; write the report");
  add_model_options(pipeline_app, pipeline->model, true);
  add_proof_options(pipeline_app, pipeline->proof);
  add_precision_option(pipeline_app, pipeline->proof);
  pipeline_app
      ->add_option("--target", pipeline->targets,
                   "Runtimes to audit the operators against (ort-cpu,ort-cuda,tensorrt,openvino) and releases to "
                   "prove on besides (ort-cpu@1.22, openvino@2025.4)")
      ->capture_default_str();
  pipeline_app->add_flag("--no-localize", pipeline->no_localize,
                         "After a parity failure, do not look for the module where the outputs first diverge");
  pipeline_app->add_flag("--attach", pipeline->attach,
                         "Take the command and the export from a front end over stdin/stdout (onnxproof.prove; "
                         "the line protocol of include/onnxproof/pipeline/attached_front_end.h); no other option");
  auto* golden = pipeline_app->add_option(
      "--golden", pipeline->golden,
      "Keep the golden set in this folder (e.g. tests/onnx/NAME in your repository): verify against it when it "
      "holds one, freeze into it when not (default: OUT/golden, carried from run to run)");
  pipeline_app->add_flag("--no-golden", pipeline->no_golden, "Neither freeze nor verify golden outputs")
      ->excludes(golden);
  pipeline_app
      ->add_option("--quantize", pipeline->quantize,
                   "static: also quantize the proved export with ONNX Runtime's quantize_static (QDQ, int8, "
                   "calibrated on the reference inputs: --data when given) into model.quant.onnx and prove it in "
                   "quantization steps (docs/quantization.md)")
      ->check(CLI::IsMember({"static"}));
  pipeline_app->add_flag("--no-simplify", pipeline->no_simplify,
                         "Prove and ship the export as written, without onnxproof's simplify");
  pipeline_app->add_flag("--repair", pipeline->repair,
                         "After a failure, try the changes the findings point at (exporter, opset, an ONNX Runtime "
                         "optimizer, a float32 block, a known rewrite), each proved in OUT/repair/ "
                         "(docs/repair.md)");
  pipeline_app->add_option("--repair-budget", pipeline->repair_budget, "Seconds --repair may spend")
      ->capture_default_str();
  pipeline_app->add_option(
      "--out", pipeline->out,
      "The run folder: new, empty, or an earlier run it replaces (default ./onnxproof-out/<model>)");
  commands.push_back({pipeline_app, [pipeline] {
                        return pipeline->attach ? present(attached_pipeline_on_stdio(*pipeline))
                                                : present(pipeline_workflow(*pipeline, std::cerr));
                      }});
}

void add_demo(CLI::App& app, Commands& commands) {
  auto demo = std::make_shared<DemoCommand>();
  auto* demo_app =
      app.add_subcommand("demo", "The pipeline on the built-in example (a CNN trained on the digits data set)");
  demo_app->add_option("--out", demo->out, "The run folder: new, empty, or an earlier run it replaces")
      ->capture_default_str();
  demo_app->add_option("--python", demo->python, "Python interpreter with torch");
  commands.push_back({demo_app, [demo] {
                        std::cout << k_demo_announcement;
                        return present(demo_workflow(*demo, std::cerr));
                      }});
}

void add_ops(CLI::App& app, Commands& commands) {
  auto ops = std::make_shared<OpsCommand>();
  auto* ops_app = app.add_subcommand("ops", "Audit every operator against the target runtimes' support tables");
  ops_app->add_option("model", ops->model, "The .onnx file");
  ops_app->add_option("--target", ops->targets, "Targets, comma-separated: ort-cpu,ort-cuda,tensorrt,openvino")
      ->capture_default_str();
  ops_app->add_option("--json", ops->json_path, "Also write the audit as JSON to this file");
  ops_app->add_flag(
      "--probe", ops->probe,
      "Audit against the loaded ONNX Runtime itself: probe each of the model's operators with a "
      "one-node session (ONNXPROOF_ONNXRUNTIME chooses the release) instead of reading --target's tables");
  auto probe = std::make_shared<ProbeCommand>();
  auto opset = std::make_shared<OpsetCommand>();
  auto* opset_app = ops_app->add_subcommand(
      "opset", "Print the newest opset ONNX, ONNX Runtime and every target support, the portable one (JSON)");
  opset_app->add_option("--target", opset->targets, "Targets, comma-separated")->capture_default_str();
  commands.push_back({opset_app, [opset] { return present(opset_workflow(*opset)); }});
  auto* probe_app = ops_app->add_subcommand("probe", "Ask the installed ONNX Runtime which operators it implements");
  probe_app->add_option("--provider", probe->provider, "Execution provider to probe")->capture_default_str();
  probe_app->add_option("--opset", probe->opset,
                        "Probe the schemas at this opset (default: the newest ONNX and ONNX Runtime support)");
  probe_app->add_flag("--all-versions", probe->all_versions, "Probe every schema version up to --opset");
  probe_app->add_option("--op", probe->ops, "Probe only this operator (repeat)");
  probe_app->add_option("--write-table", probe->write_table, "Write the probed support table (data/op-support format)");
  commands.push_back({probe_app, [probe] { return present(probe_workflow(*probe)); }});
  commands.push_back({ops_app, [ops] {
                        if (!ops->model.empty()) return present(ops_workflow(*ops));
                        return report_error(
                            Error(ErrorCode::usage, "ops needs a MODEL.onnx (or the probe subcommand)"));
                      }});
}

void add_simplify(CLI::App& app, Commands& commands) {
  auto simplify = std::make_shared<SimplifyCommand>();
  auto* simplify_app =
      app.add_subcommand("simplify", "Fold constants, drop dead code and no-ops; prove the outputs unchanged");
  simplify_app->add_option("model", simplify->model, "The .onnx file (never modified)")->required();
  simplify_app->add_option("-o,--output", simplify->output, "Where to write the simplified model")->required();
  simplify_app->add_option("--max-fold-bytes", simplify->max_fold_bytes, "Largest tensor constant folding may create")
      ->capture_default_str();
  simplify_app->add_option(
      "--skip-pass", simplify->skip_passes,
      "A pass not to run (repeat): dead-code, no-ops, shape-folding, constant-folding, common-subexpressions, fusions");
  simplify_app->add_option("--skip-rule", simplify->skip_rules, "A rule not to run (repeat), e.g. fuse-transposes");
  simplify_app->add_option("--reference", simplify->reference,
                           "Prove on these inputs (test_data_set_N/) instead of generated ones");
  add_proof_options(simplify_app, simplify->proof);
  commands.push_back({simplify_app, [simplify] { return present(simplify_workflow(*simplify)); }});
}

void add_localize(CLI::App& app, Commands& commands) {
  auto localize = std::make_shared<LocalizeCommand>();
  auto* localize_app = app.add_subcommand(
      "localize",
      "Find the module where ONNX Runtime's outputs first depart from the source framework's (PyTorch's,\n"
      "TensorFlow's), in a run folder. A run folder is code: this runs (in Python, with the framework that\n"
      "exported it) the model spec that RUN/export.json names, importing a .py file it points at. Use it\n"
      "only on run folders you made or trust as you would their model's code; --captured starts no Python.");
  localize_app->add_option("run", localize->run, "The run folder of onnxproof pipeline")->required();
  localize_app->add_option("--case", localize->data_set,
                           "The reference case, e.g. test_data_set_3 (default: the worst failing one)");
  localize_app->add_option("--provider", localize->provider, "Execution provider")->capture_default_str();
  localize_app
      ->add_option("--optimization", localize->optimization, "ONNX Runtime graph optimizations: all or disabled")
      ->capture_default_str();
  localize_app->add_option("--python", localize->python,
                           "Python interpreter with the run's framework (as for the export: torch, or tensorflow)");
  localize_app->add_flag(
      "--captured", localize->captured,
      "localize/modules.json is there already (written by onnxproof.localize.write_localization in the "
      "process that holds the model)");
  localize_app->add_option("--rtol", localize->proof.rtol, "Relative tolerance (default per dtype)");
  localize_app->add_option("--atol", localize->proof.atol, "Absolute tolerance (default per dtype)");
  commands.push_back({localize_app, [localize] { return present(localize_workflow(*localize, std::cout)); }});
}

void add_repair(CLI::App& app, Commands& commands) {
  auto repair = std::make_shared<RepairCommand>();
  auto* repair_app = app.add_subcommand(
      "repair",
      "From a failed run, try the changes its findings point at, cheapest first, each a full proof in\n"
      "RUN/repair/NN-NAME: an ONNX Runtime optimizer disabled, a block kept in float32,\n"
      "a known rewrite, the other exporter, lower opsets (docs/repair.md). Exports again from the model\n"
      "spec RUN/command.json names: use it only on run folders you made or trust as their model's code.");
  repair_app->add_option("run", repair->run, "The run folder of a failed onnxproof pipeline")->required();
  repair_app->add_option("--repair-budget", repair->budget, "Seconds to spend; no candidate starts after")
      ->capture_default_str();
  repair_app->add_flag("--all", repair->every_candidate,
                       "Try every candidate, not only up to the first that passes: the table shows every change that "
                       "fixes the run (the first stays the repair)");
  commands.push_back({repair_app, [repair] { return present(repair_workflow(*repair, std::cerr)); }});
}

void add_export(CLI::App& app, Commands& commands) {
  auto export_command = std::make_shared<ExportCommand>();
  auto* export_app =
      app.add_subcommand("export", "Export a PyTorch or TensorFlow model to OUT/model.onnx with its reference outputs");
  add_model_options(export_app, export_command->model);
  export_app->add_option("--out", export_command->out, "The run folder: new, empty, or an earlier run")->required();
  commands.push_back({export_app, [export_command] { return present(export_workflow(*export_command, std::cerr)); }});
}

void add_bisect_release(CLI::App& app, Commands& commands) {
  auto bisect = std::make_shared<BisectReleaseCommand>();
  auto* bisect_app = app.add_subcommand("bisect-release",
                                        "Since when: bisect the cached ONNX Runtime releases "
                                        "between a passing and a failing one; name the first failing "
                                        "release and the optimizer to blame (RUN/bisect/)");
  bisect_app->add_option("run", bisect->run, "The run folder of onnxproof pipeline")->required();
  bisect_app->add_option("--good", bisect->good, "A release the model passes on (default: from the run's --target)");
  bisect_app->add_option("--bad", bisect->bad, "A release the model fails on (default: from the run's --target)");
  bisect_app->add_flag("--fetch", bisect->fetch, "Fetch the releases in between that the cache lacks first");
  commands.push_back({bisect_app, [bisect] { return present(bisect_release_workflow(*bisect, std::cerr)); }});
}

// `zoo ...`: every argument after `zoo` goes to the Python zoo; this process becomes it.
void add_zoo(CLI::App& app, Commands& commands) {
  auto zoo = std::make_shared<ZooCommand>();
  auto* zoo_app = app.add_subcommand(
      "zoo",
      "Prove a zoo of models from ZOO.toml on Ray or local processes, with a cache and one dashboard "
      "(zoo run ZOO.toml --out DIR, zoo merge DIR... --out DIR; docs/zoo.md)");
  zoo_app->set_help_flag();
  zoo_app->prefix_command();
  zoo_app->allow_extras();
  commands.push_back({zoo_app, [zoo, zoo_app] {
                        zoo->arguments = zoo_app->remaining();
                        zoo->engine = std::filesystem::read_symlink("/proc/self/exe");
                        return report_error(zoo_workflow(*zoo));  // returns only when Python cannot start
                      }});
}

}  // namespace

int main(int argc, char** argv) {
  using namespace onnxproof;
  using onnxproof::PrintableStandardStreams;
  // Before anything asks ONNX Runtime a question: the library is chosen by starting again.
  const auto variable = [](const char* name) { return std::string(std::getenv(name) ? std::getenv(name) : ""); };
  const LibraryChoiceEnvironment choice{variable(k_onnxruntime_variable), variable(k_onnxruntime_loaded_variable),
                                        std::getenv(k_onnxruntime_probe_variable) != nullptr,
                                        variable("LD_LIBRARY_PATH")};
  if (auto chosen = select_onnxruntime_library(argv, choice); !chosen) return report_error(chosen.error());
  const PrintableStandardStreams printable;  // names from a model never drive the terminal
  CLI::App app{
      "onnxproof: turn a PyTorch or TensorFlow model into an ONNX file that can be trusted (conversion plus proof)"};
  app.name("onnxproof");  // the usage line names the command, not the path it was started by
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "Print the versions of onnxproof and the tools it uses");
  Commands commands;
  // --help lists the commands in this order: the whole proof first, then its single steps.
  for (const auto add : {add_pipeline, add_demo, add_export, add_check, add_simplify, add_ops, add_parity, add_golden,
                         add_run, add_localize, add_repair, add_bisect_release, add_zoo})
    add(app, commands);
  app.footer(
      "Examples:\n"
      "  onnxproof pipeline --model torchvision:resnet18 --out onnxproof-out/resnet18\n"
      "  onnxproof pipeline --model model.py:build --input x=1x3x32x32:float32 --dynamic x:0=batch\n"
      "  onnxproof demo\n"
      "  onnxproof zoo run ZOO.toml --out zoo-out --workers 2\n"
      "COMMAND --help shows a command's options; the guide and the reference are onnxproof's README.md and "
      "docs/.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    std::cerr << "onnxproof: error: " << error.what() << " (see onnxproof --help)\n";
    return exit_code(Error(ErrorCode::usage, error.what()));
  }

  // The environment and the install layout are read here, once; the libraries get the result.
  onnxproof::use_installation(onnxproof::resolve_installation(std::filesystem::read_symlink("/proc/self/exe")));
  onnxproof::install_interrupt_cleanup();  // SIGINT/SIGTERM remove staging folders and end a child

  try {
    if (show_version) return present(Expected<Outcome<VersionsResult>>(versions_workflow()));
    for (const auto& command : commands) {
      if (*command.parsed) return command.run();
    }
    std::cout << app.help();
    return exit_code(Error(ErrorCode::usage, "no command"));
  } catch (const std::exception& error) {
    // Library code returns errors as values; reaching here is a bug, still reported in one line.
    std::cerr << "onnxproof: error: internal error: " << error.what() << '\n';
    return exit_code(Error(ErrorCode::internal, error.what()));
  }
}
