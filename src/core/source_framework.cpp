#include "onnxproof/core/source_framework.h"

#include <algorithm>

namespace onnxproof {

namespace {

constexpr std::array<SourceFramework, 2> k_frameworks = {{
    {k_torch, "PyTorch", "forward()", {"auto", "torchscript", "dynamo", "both"}, {"dynamo", "torchscript"}},
    // "keras": Keras's own model.export(format="onnx"); "tf2onnx": the tf2onnx converter.
    {k_tensorflow, "TensorFlow", "call()", {"auto", "tf2onnx", "keras", "both"}, {"tf2onnx", "keras"}},
}};

}  // namespace

std::span<const SourceFramework> source_frameworks() { return k_frameworks; }

const SourceFramework* source_framework(std::string_view name) {
  if (name.empty()) return &k_frameworks.front();  // what exported before the field existed
  const auto found = std::find_if(k_frameworks.begin(), k_frameworks.end(),
                                  [&](const SourceFramework& framework) { return framework.name == name; });
  return found == k_frameworks.end() ? nullptr : &*found;
}

std::string source_title(std::string_view name) {
  const SourceFramework* framework = source_framework(name);
  return std::string(framework ? framework->title : name);
}

std::string_view module_call(std::string_view name) {
  const SourceFramework* framework = source_framework(name);
  return framework ? framework->call : source_frameworks().front().call;
}

std::string worded_for(std::string_view text, std::string_view name) {
  constexpr std::string_view k_pytorch = "PyTorch";
  const std::string title = source_title(name);
  std::string worded(text);
  for (auto at = worded.find(k_pytorch); at != std::string::npos; at = worded.find(k_pytorch, at + title.size()))
    worded.replace(at, k_pytorch.size(), title);
  return worded;
}

}  // namespace onnxproof
