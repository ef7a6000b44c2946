// The `openvino` target's table from the installed OpenVINO (openvino_table.h).
#include "onnxproof/ops/openvino_table.h"

#include <set>

#include "onnxproof/model/graph_walk.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

std::optional<SupportTable> openvino_model_table(const std::filesystem::path& path, const onnx::ModelProto& model) {
  const auto reading = read_with_openvino(path);
  if (!reading) return std::nullopt;
  SupportTable table;
  table.target = "openvino";
  const bool compiled = reading->refusal.empty();
  table.runtime = "OpenVINO " + reading->version + " CPU plugin (" +
                  (compiled ? std::string("read and compiled this model)") : std::string("refused this model)"));
  table.source = "the installed OpenVINO: the model read by its ONNX frontend and compiled for the CPU";
  // "NoSuchOp-17", or with a custom domain "com.microsoft.Foo-1": matched with and without it.
  std::set<std::string> unconverted;
  for (const auto& name : reading->unconverted) unconverted.insert(name.substr(0, name.rfind('-')));
  std::set<std::pair<std::string, std::string>> seen;
  const auto named = [&](const std::string& domain, const std::string& op_type) {
    return unconverted.contains(op_type) || unconverted.contains(domain + "." + op_type);
  };
  // The operators of this model OpenVINO named; where it named none of them, none is blamed.
  bool blamed = false;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& node : graph.node())
      blamed = blamed || named(node.domain().empty() ? "ai.onnx" : node.domain(), node.op_type());
  });
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) {
      const std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
      if (!seen.emplace(domain, node.op_type()).second) continue;
      SupportEntry entry{domain, node.op_type(), 0, 0, SupportStatus::supported, ""};
      if (named(domain, node.op_type())) {
        entry.status = SupportStatus::unsupported;
        entry.restrictions = "OpenVINO " + reading->version + "'s ONNX frontend has no conversion rule for it";
      } else if (!compiled && !blamed) {
        // Not compiled, or not read for a reason that names no operator of this model: every one
        // is restricted with OpenVINO's message.
        entry.status = SupportStatus::restricted;
        entry.restrictions = "OpenVINO refused the model: " + reading->refusal;
      }
      table.entries.push_back(std::move(entry));
    }
  });
  return table;
}

void use_installed_openvino(std::vector<SupportTable>& tables, const std::filesystem::path& path,
                            const onnx::ModelProto& model) {
  for (auto& table : tables) {
    if (table.target != "openvino") continue;
    if (auto installed = openvino_model_table(path, model)) table = std::move(*installed);
  }
}

}  // namespace onnxproof
