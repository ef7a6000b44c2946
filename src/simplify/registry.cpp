// The registry: every built-in rule, listed once, in the order a round runs them. A rule is
// declared in its pass's unit; adding one is adding it to that unit's list.

#include "passes.h"

namespace onnxproof {

const std::vector<Rule>& builtin_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> all;
    for (auto&& part :
         {simplify::dead_code_rules(), simplify::no_op_rules(), simplify::shape_folding_rules(),
          simplify::constant_folding_rules(), simplify::common_subexpression_rules(), simplify::fusion_rules()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return rules;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const auto& rule : builtin_rules()) {
    if (names.empty() || names.back() != rule.pass) names.push_back(rule.pass);
  }
  return names;
}

}  // namespace onnxproof
