// `onnxproof zoo`: the model zoo lives in the Python package (python/onnxproof/zoo), which
// schedules one `onnxproof pipeline` per model on Ray or in local processes. The engine becomes it
// (exec), with the interpreter and package the export uses and this binary's path, so that Ctrl-C
// reaches the zoo itself, which ends its pipelines, and its exit code is the command's.
#include <cstdio>
#include <iostream>

#include "onnxproof/workflow/workflows.h"

namespace onnxproof {

Error zoo_workflow(const ZooCommand& command) {
  std::vector<std::string> arguments{"--engine", command.engine.string()};
  arguments.insert(arguments.end(), command.arguments.begin(), command.arguments.end());
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  return exec_front_end_module("onnxproof.zoo", std::move(arguments));
}

}  // namespace onnxproof
