#pragma once
// The source frameworks a model comes from (python/onnxproof/NAME/), as the engine knows them:
// the name export.json and the configuration carry, the title messages call it by, and the
// exporters each one offers. One table (source_framework.cpp): a third framework is one entry.

#include <array>
#include <span>
#include <string>
#include <string_view>

namespace onnxproof {

/// export.json's "framework" for each source framework (the front end's subpackage).
inline constexpr std::string_view k_torch = "torch";
inline constexpr std::string_view k_tensorflow = "tensorflow";

struct SourceFramework {
  std::string_view name;   // "torch": export.json's and the configuration's framework
  std::string_view title;  // "PyTorch": what the reports and messages call it
  std::string_view call;   // "forward()": the method of a module (a Keras layer's call()) hints point at
  /// What --exporter takes for its models, as usage errors list them ("both" last).
  std::array<std::string_view, 4> exporters;
  /// --exporter both: the two exporters proved, in the order they run; each one's run folder
  /// is OUT/NAME.
  std::array<std::string_view, 2> compared;
};

/// Every source framework, PyTorch first (the framework of a spec no other claims).
std::span<const SourceFramework> source_frameworks();

/// The framework named `name`: PyTorch's for "" (an export.json older than the field, a reference
/// folder with no export beside it); null for a name onnxproof does not know.
const SourceFramework* source_framework(std::string_view name);

/// What messages call the framework `name`: "PyTorch" for "torch" or "", "TensorFlow" for
/// "tensorflow", the name itself for one onnxproof does not know.
std::string source_title(std::string_view name);

/// The method hints name for a module of framework `name` ("forward()", "call()"); PyTorch's for
/// a name onnxproof does not know.
std::string_view module_call(std::string_view name);

/// `text` written for PyTorch (the finding-code registry's meanings, data/finding_codes.json, which
/// the README and both languages share) with every "PyTorch" in it naming framework `name` instead;
/// unchanged for PyTorch itself.
std::string worded_for(std::string_view text, std::string_view name);

}  // namespace onnxproof
