// `onnxproof zoo`: the model zoo lives in the Python package (python/onnxproof/zoo), which
// schedules one `onnxproof pipeline` per model on Ray or in local processes; the engine starts it
// with the interpreter and package the export uses and hands it this binary's path.
#include <ostream>

#include "onnxproof/workflow/workflows.h"

namespace onnxproof {

Expected<int> zoo_workflow(const ZooCommand& command, std::ostream& out) {
  std::vector<std::string> arguments{"--engine", command.engine.string()};
  arguments.insert(arguments.end(), command.arguments.begin(), command.arguments.end());
  return run_front_end_module("onnxproof.zoo", std::move(arguments), [&out](const std::string& line) {
    out << line << '\n' << std::flush;
  });
}

}  // namespace onnxproof
