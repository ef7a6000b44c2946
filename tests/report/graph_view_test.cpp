// The localization node by node: each node takes its innermost compared module's status and
// figures, the view holds the first divergent nodes and their neighbourhood, Model Explorer's
// overlay names nodes by name under the graph's id, and the drawing is self-contained SVG.

#include <gtest/gtest.h>

#include <algorithm>

#include "onnxproof/localize/localize.h"
#include "onnxproof/report/localize_report.h"

namespace onnxproof {
namespace {

// x -> n0 -> n1 -> n2 -> n3 -> n4 -> n5 -> y; n6 reads x too and feeds n5.
GraphStructure chain() {
  GraphStructure structure{.name = "main_graph", .nodes = {}};
  const char* ops[] = {"MatMul", "Relu", "Add", "Sqrt", "MatMul", "Add", "Neg"};
  for (int i = 0; i < 6; ++i) {
    structure.nodes.push_back({.name = "n" + std::to_string(i),
                               .op_type = ops[i],
                               .inputs = {i == 0 ? "x" : "v" + std::to_string(i - 1)},
                               .outputs = {"v" + std::to_string(i)}});
  }
  structure.nodes[5].inputs.push_back("v6");
  structure.nodes.insert(structure.nodes.begin() + 5,
                         {.name = "n6<odd>", .op_type = ops[6], .inputs = {"x"}, .outputs = {"v6"}});
  return structure;
}

ModuleComparison module(std::string name, std::vector<std::string> nodes, bool inputs_agree, bool outputs_agree) {
  ModuleComparison m;
  m.module = std::move(name);
  m.class_name = "Block";
  m.nodes = std::move(nodes);
  m.matched = true;
  m.inputs_agree = inputs_agree;
  m.outputs_agree = outputs_agree;
  m.output_error = outputs_agree ? 1e-7 : 0.5;
  m.output_abs = outputs_agree ? 1e-7 : 2.0;
  m.output_elements = 100;
  m.output_mismatches = outputs_agree ? 0 : 25;
  return m;
}

std::vector<ModuleComparison> modules() {
  return {module("block.0", {"n0", "n1"}, true, true), module("block.1", {"n2", "n3"}, true, false),
          module("block.2", {"n4"}, false, false),
          module("", {"n0", "n1", "n2", "n3", "n4", "n6<odd>", "n5"}, true, false)};
}

const NodeError& named(const std::vector<NodeError>& errors, const std::string& name) {
  return *std::find_if(errors.begin(), errors.end(), [&](const NodeError& e) { return e.node == name; });
}

TEST(GraphView, EachNodeTakesItsInnermostModule) {
  const auto errors = node_errors_of(modules(), 1, chain());
  ASSERT_EQ(errors.size(), 7U);
  EXPECT_EQ(named(errors, "n0").status, NodeStatus::agrees);
  EXPECT_EQ(named(errors, "n0").module, "block.0");
  EXPECT_EQ(named(errors, "n2").status, NodeStatus::first);
  EXPECT_EQ(named(errors, "n3").status, NodeStatus::first);
  EXPECT_DOUBLE_EQ(named(errors, "n3").share_outside, 0.25);
  EXPECT_EQ(named(errors, "n4").status, NodeStatus::carried);
  // Only the whole model holds n5: its inputs agree (the model's inputs), its outputs do not.
  EXPECT_EQ(named(errors, "n5").module, "");
  EXPECT_EQ(named(errors, "n5").status, NodeStatus::diverges);
}

// A container located because its activation child could not be paired and the exporter left the
// activation's node without the module's scope (MobileNetV3's Hardswish): the node between the
// container's boundary values is where the error appears; the child that agrees is not blamed.
TEST(GraphView, ANodeBetweenTheLocatedModulesBoundaryValuesIsFirstUnlessAChildAgrees) {
  auto unpaired = module("p.act", {}, true, true);
  unpaired.matched = false;
  auto parent = module("p", {"n2"}, true, false);
  parent.input_values = {"v1"};
  parent.output_values = {"v3"};
  const std::vector<ModuleComparison> nested = {module("p.linear", {"n2"}, true, true), unpaired, parent};
  const auto errors = node_errors_of(nested, 2, chain());
  EXPECT_EQ(named(errors, "n2").status, NodeStatus::agrees);
  EXPECT_EQ(named(errors, "n3").status, NodeStatus::first);
  EXPECT_EQ(named(errors, "n3").module, "p");
  EXPECT_EQ(named(errors, "n1").status, NodeStatus::not_compared);  // before the boundary
  // After it: a node a later module claims keeps that module's status.
  auto claimed = nested;
  claimed.push_back(module("q", {"n4", "n5"}, false, false));
  EXPECT_EQ(named(node_errors_of(claimed, 2, chain()), "n4").status, NodeStatus::carried);
}

// A rewrite that replaced the module's activation by nodes of no name (a planted HardSwish
// without its clip): the module's output value was paired with its last scoped node, so the nodes
// no module claims that read it are where the error leaves it.
TEST(GraphView, UnclaimedNodesRightAfterTheLocatedModuleAreFirstDivergent) {
  auto structure = chain();
  structure.nodes[4].name = "";  // n4 lost its name
  auto located = module("p", {"n2", "n3"}, true, false);
  located.output_values = {"v3"};
  const std::vector<ModuleComparison> compared = {module("early", {"n0", "n1"}, true, true), located,
                                                  module("late", {"n5"}, false, false)};
  const auto errors = node_errors_of(compared, 1, structure);
  EXPECT_EQ(errors[4].status, NodeStatus::first);
  EXPECT_EQ(errors[4].module, "p");
  EXPECT_EQ(named(errors, "n5").status, NodeStatus::carried);  // claimed: the walk stops there
  EXPECT_EQ(named(errors, "n1").status, NodeStatus::agrees);
}

TEST(GraphView, TheNeighbourhoodHoldsTheFirstDivergentNodesAndTheirSurroundings) {
  const auto errors = node_errors_of(modules(), 1, chain());
  const auto view = divergence_neighbourhood(errors, chain(), 1);
  ASSERT_TRUE(view.has_value());
  std::vector<std::string> names;
  for (const auto& node : view->nodes) names.push_back(node.node);
  EXPECT_EQ(names, (std::vector<std::string>{"n1", "n2", "n3", "n4"}));
  EXPECT_EQ(view->graph, "main_graph");
  EXPECT_EQ(view->graph_nodes, 7U);
  EXPECT_EQ(view->edges, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(view->rows, (std::vector<int>{0, 1, 2, 3}));
  const auto bounded = divergence_neighbourhood(errors, chain(), 5, 3);
  ASSERT_TRUE(bounded.has_value());
  EXPECT_EQ(bounded->nodes.size(), 3U);
  EXPECT_FALSE(divergence_neighbourhood(node_errors_of(modules(), std::nullopt, chain()), chain()).has_value());
}

TEST(GraphView, ModelExplorerNodeDataIsKeyedByGraphAndNodeName) {
  const auto errors = node_errors_of(modules(), 1, chain());
  const auto data = model_explorer_node_data("main_graph", errors);
  ASSERT_TRUE(data.contains("main_graph"));
  const auto& results = data["main_graph"]["results"];
  EXPECT_DOUBLE_EQ(results["n2"]["value"].get<double>(), 0.25);
  EXPECT_TRUE(results["n2"].contains("bgColor"));
  EXPECT_DOUBLE_EQ(results["n0"]["value"].get<double>(), 0.0);
  EXPECT_FALSE(results["n0"].contains("bgColor"));
  EXPECT_EQ(data["main_graph"]["thresholds"].size(), 4U);
}

TEST(GraphView, TheDrawingIsSelfContainedSvgWithTheFirstNodesMarked) {
  const auto errors = node_errors_of(modules(), 1, chain());
  const auto view = divergence_neighbourhood(errors, chain(), 3);
  ASSERT_TRUE(view.has_value());
  const std::string svg = graph_view_svg(*view);
  ASSERT_TRUE(svg.starts_with("<svg"));
  std::size_t first = 0;
  for (auto at = svg.find("class=\"node first\""); at != std::string::npos;
       at = svg.find("class=\"node first\"", at + 1))
    ++first;
  EXPECT_EQ(first, 2U);
  EXPECT_NE(svg.find("n6&lt;odd&gt;"), std::string::npos);  // escaped
  EXPECT_NE(svg.find("<title>n2 (Add)"), std::string::npos);
  EXPECT_NE(svg.find("25% of elements outside the budget"), std::string::npos);
  for (const char* external : {"href=\"http", "src=", "<script", "url(http", "@import"})
    EXPECT_EQ(svg.find(external), std::string::npos) << external;
}

}  // namespace
}  // namespace onnxproof
