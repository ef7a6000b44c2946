// Each pass on graphs built in code: op counts before and after, outputs compared before and after
// with ONNX Runtime, and the cases where a pass must not fire.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/simplify/simplify.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

TEST(DeadCode, RemovesNodesAndInitializersNothingReads) {
  auto model = relu_model();
  add_initializer(model, "unused", k_float, {2}, {1, 2});
  add_node(model, "Neg", {"x"}, {"dead"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Neg"), 0);
  EXPECT_EQ(count(simplified, "Relu"), 1);
  EXPECT_EQ(simplified.graph().initializer_size(), 0);
}

TEST(NoOps, IdentityAndSameTypeCastAreBypassed) {
  auto model = single_node_model("Identity", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 3}));
  model.mutable_graph()->mutable_node(0)->set_output(0, "i");
  auto* cast = add_node(model, "Cast", {"i"}, {"c"});
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  add_node(model, "Relu", {"c"}, {"y"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Identity"), 0);
  EXPECT_EQ(count(simplified, "Cast"), 0);
  EXPECT_EQ(count(simplified, "Relu"), 1);
}

// A chain of no-ops removed in one pass: each rename resolves to the value the chain starts from,
// also across a no-op whose output is the graph's output (its producer takes the name), and the
// reads inside a subgraph are renamed too.
TEST(NoOps, ChainsAreRemovedInOnePassUpToTheGraphOutput) {
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 3}));
  model.mutable_graph()->mutable_node(0)->set_output(0, "r");
  add_node(model, "Identity", {"r"}, {"i1"});
  add_node(model, "Identity", {"i1"}, {"i2"});
  add_node(model, "Neg", {"i2"}, {"n"});
  add_node(model, "Identity", {"n"}, {"y"});  // the graph output's own name survives
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Identity"), 0);
  ASSERT_EQ(simplified.graph().node_size(), 2);
  EXPECT_EQ(simplified.graph().node(1).input(0), "r");
  EXPECT_EQ(simplified.graph().node(1).output(0), "y");
}

// A graph without a Constant node keeps every node (the sweep that turns Constants into
// initializers must hand the others back).
TEST(ConstantFolding, AGraphWithoutConstantsKeepsItsNodes) {
  auto model = relu_model();
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Relu"), 1);
  EXPECT_FALSE(simplified.graph().node(0).op_type().empty());
}

TEST(NoOps, AnExpandByOnesGoesOverSymbolicSizesButAnExpandThatGrowsStays) {
  // x N x 3 (N symbolic) -> Expand [1, 1] -> N x 3 -> Relu: the Expand goes.
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {-1, 3})}, tensor_value("y", k_float, {-1, 3}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "e");
  add_initializer(model, "ones", onnx::TensorProto::INT64, {2}, {}, {1, 1});
  add_node(model, "Expand", {"x", "ones"}, {"e"});
  EXPECT_EQ(count(simplify_and_prove(model), "Expand"), 0);
  // Expand [2, 1, 1] adds a dimension of 2: it stays.
  auto grows = single_node_model("Relu", {tensor_value("x", k_float, {-1, 3})}, tensor_value("y", k_float, {2, -1, 3}));
  grows.mutable_graph()->mutable_node(0)->set_input(0, "e");
  add_initializer(grows, "shape", onnx::TensorProto::INT64, {3}, {}, {2, 1, 1});
  add_node(grows, "Expand", {"x", "shape"}, {"e"});
  EXPECT_EQ(count(simplify_and_prove(grows), "Expand"), 1);
}

TEST(NoOps, MustNotFireWhenTheNodeChangesSomething) {
  // A Cast that changes the type, a Reshape that changes the shape, and an Identity that joins a
  // graph input to a graph output all stay.
  auto model = single_node_model("Reshape", {tensor_value("x", k_float, {2, 3})}, tensor_value("r", k_float, {3, 2}));
  model.mutable_graph()->mutable_node(0)->add_input("shape");
  add_initializer(model, "shape", onnx::TensorProto::INT64, {2}, {}, {3, 2});
  auto* cast = add_node(model, "Cast", {"r"}, {"c"});
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::DOUBLE);
  *model.mutable_graph()->add_output() = tensor_value("c", onnx::TensorProto::DOUBLE, {3, 2});
  model.mutable_graph()->mutable_output()->DeleteSubrange(0, 1);
  add_node(model, "Identity", {"x"}, {"passthrough"});
  *model.mutable_graph()->add_output() = tensor_value("passthrough", k_float, {2, 3});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Reshape"), 1);
  EXPECT_EQ(count(simplified, "Cast"), 1);
  EXPECT_EQ(count(simplified, "Identity"), 1);
}

TEST(ConstantFolding, FoldsConstantSubgraphsIntoInitializers) {
  auto model = relu_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "sum");
  add_initializer(model, "a", k_float, {2, 3}, {1, 2, 3, 4, 5, 6});
  add_initializer(model, "b", k_float, {2, 3}, {1, 1, 1, 1, 1, 1});
  add_node(model, "Add", {"a", "b"}, {"ab"});
  add_node(model, "Add", {"ab", "x"}, {"sum"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Add"), 1);  // a + b folded, + x stays
}

TEST(ConstantFolding, NeverFoldsRandomOpsOrTensorsOverTheCap) {
  auto model = relu_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "sum");
  auto* random = add_node(model, "RandomNormal", {}, {"noise"});
  auto* shape = random->add_attribute();
  shape->set_name("shape");
  shape->set_type(onnx::AttributeProto::INTS);
  shape->add_ints(2);
  shape->add_ints(3);
  add_node(model, "Mul", {"noise", "x"}, {"scaled"});
  add_initializer(model, "one", k_float, {1}, {1.0F});
  add_initializer(model, "big_shape", onnx::TensorProto::INT64, {2}, {}, {2, 3});
  add_node(model, "Expand", {"one", "big_shape"}, {"ones"});
  add_node(model, "Add", {"scaled", "ones"}, {"sum"});
  onnx::ModelProto simplified = model;
  auto result = simplify_model(simplified, SimplifyOptions{.max_fold_bytes = 16});  // 2x3 floats = 24 bytes
  ASSERT_TRUE(result) << result.error().describe();
  EXPECT_EQ(count(simplified, "RandomNormal"), 1);
  EXPECT_EQ(count(simplified, "Expand"), 1);
}

TEST(ConstantFolding, FoldsAnExpandUnderTheCap) {
  auto model = relu_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "sum");
  add_initializer(model, "one", k_float, {1}, {1.0F});
  add_initializer(model, "big_shape", onnx::TensorProto::INT64, {2}, {}, {2, 3});
  add_node(model, "Expand", {"one", "big_shape"}, {"ones"});
  add_node(model, "Add", {"x", "ones"}, {"sum"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Expand"), 0);
}

TEST(ShapeFolding, ShapeOfAStaticTensorBecomesAConstantAndTheReshapeGoes) {
  // y = Relu(Reshape(x, Shape(x))): the shape folds, then the Reshape is a no-op.
  auto model = relu_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "r");
  add_node(model, "Shape", {"x"}, {"s"});
  add_node(model, "Reshape", {"x", "s"}, {"r"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Shape"), 0);
  EXPECT_EQ(count(simplified, "Reshape"), 0);
}

TEST(ShapeFolding, MustNotFireOnSymbolicDimensions) {
  auto model = single_node_model("Shape", {tensor_value("x", k_float, {-1, 3})},
                                 tensor_value("y", onnx::TensorProto::INT64, {2}));
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Shape"), 1);
}

TEST(Simplify, RestoresTopologicalOrderAndPassesTheChecker) {
  auto model = relu_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "n");  // Relu reads a value produced after it
  add_node(model, "Neg", {"x"}, {"n"});
  onnx::ModelProto simplified = model;
  ASSERT_TRUE(simplify_model(simplified));
  EXPECT_EQ(simplified.graph().node(0).op_type(), "Neg");
  EXPECT_EQ(simplified.graph().node(1).op_type(), "Relu");
}

TEST(Simplify, NoOpsInsideSubgraphsAreRemovedToo) {
  auto model = if_model_with_constant_branches(false);
  for (auto& attribute : *model.mutable_graph()->mutable_node(0)->mutable_attribute()) {
    auto* graph = attribute.mutable_g();
    const std::string out = graph->output(0).name();
    graph->mutable_node(0)->set_output(0, out + "_raw");
    auto* identity = graph->add_node();
    identity->set_op_type("Identity");
    identity->add_input(out + "_raw");
    identity->add_output(out);
  }
  const auto simplified = simplify_and_prove(model);
  for (const auto& attribute : simplified.graph().node(0).attribute()) {
    ASSERT_EQ(attribute.g().node_size(), 1);
    EXPECT_EQ(attribute.g().node(0).op_type(), "Constant");
    EXPECT_EQ(attribute.g().node(0).output(0), attribute.g().output(0).name());  // the producer took the output name
  }
}

TEST(ConstantFolding, FoldsInsideIfBranchesButNotWhatReadsTheEnclosingGraph) {
  // Each branch: out = Mul(Add(c, c), x) with c a Constant node and x the main graph's input.
  auto model = if_model_with_constant_branches(false);
  *model.mutable_graph()->add_input() = tensor_value("x", k_float, {1});
  for (auto& attribute : *model.mutable_graph()->mutable_node(0)->mutable_attribute()) {
    auto* graph = attribute.mutable_g();
    const std::string out = graph->output(0).name();
    graph->mutable_node(0)->set_output(0, out + "_c");
    for (const auto& [op, inputs, output] : {std::tuple{"Add", std::vector{out + "_c", out + "_c"}, out + "_sum"},
                                             {"Mul", std::vector{out + "_sum", std::string("x")}, out}}) {
      auto* node = graph->add_node();
      node->set_op_type(op);
      for (const auto& in : inputs) node->add_input(in);
      node->add_output(output);
    }
  }
  const auto simplified = simplify_and_prove(model);
  for (const auto& attribute : simplified.graph().node(0).attribute()) {
    ASSERT_EQ(attribute.g().node_size(), 1);  // Constant and Add folded into an initializer
    EXPECT_EQ(attribute.g().node(0).op_type(), "Mul");
    ASSERT_EQ(attribute.g().initializer_size(), 1);  // (the proof checks its value)
    EXPECT_EQ(attribute.g().initializer(0).name(), attribute.g().node(0).input(0));
  }
}

TEST(Simplify, DeadNodesInsideSubgraphsAreRemovedToo) {
  const auto model = if_model_with_constant_branches(true);
  const auto simplified = simplify_and_prove(model);
  for (const auto& attribute : simplified.graph().node(0).attribute()) EXPECT_EQ(attribute.g().node_size(), 1);
}

// A declared input no machine holds (100000 x 100000 float32, 40 GB): the proof on generated
// inputs is refused with one clear error before any allocation (it was std::bad_alloc).
TEST(SimplifyProof, HugeDeclaredInputsAreAClearErrorNotBadAlloc) {
  auto model = single_node_model("Relu", {tensor_value("x", onnx::TensorProto::FLOAT, {100000, 100000})},
                                 tensor_value("y", onnx::TensorProto::FLOAT, {100000, 100000}));
  auto* graph = model.mutable_graph();
  graph->mutable_node(0)->set_input(0, "t");  // x -> Identity -> t -> Relu -> y: the Identity goes
  auto* identity = graph->add_node();
  identity->set_op_type("Identity");
  identity->add_input("x");
  identity->add_output("t");
  graph->mutable_node()->SwapElements(0, 1);
  TempDir dir;
  write_bytes(dir / "huge.onnx", model.SerializeAsString());
  const auto outcome = simplify_file(dir / "huge.onnx", dir / "out.onnx", {}, nullptr, {}, true);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code(), ErrorCode::limit_exceeded);
  EXPECT_NE(outcome.error().describe().find("over 1 GiB"), std::string::npos) << outcome.error().describe();
  EXPECT_FALSE(std::filesystem::exists(dir / "out.onnx"));
}

}  // namespace

TEST(ShapeFolding, AStaticDimensionGatheredFromAPartlySymbolicShapeFolds) {
  // x is Nx3: Gather(Shape(x), 1) is 3 for every N; Gather(Shape(x), 0) stays.
  auto model = single_node_model("Identity", {tensor_value("x", k_float, {-1, 3})},
                                 tensor_value("cols", onnx::TensorProto::INT64, {}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "picked");
  add_initializer(model, "one", onnx::TensorProto::INT64, {}, {}, {1});
  add_initializer(model, "zero", onnx::TensorProto::INT64, {}, {}, {0});
  add_node(model, "Shape", {"x"}, {"s"});
  add_node(model, "Gather", {"s", "one"}, {"picked"});
  add_node(model, "Gather", {"s", "zero"}, {"rows"});
  *model.mutable_graph()->add_output() = tensor_value("rows", onnx::TensorProto::INT64, {});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Gather"), 1);
  EXPECT_EQ(count(simplified, "Shape"), 1);
}

TEST(NoOps, ZeroPlusXWithTheConstantFirstGoesToo) {
  auto model = relu_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "a");
  add_initializer(model, "zeros", k_float, {1, 3}, {0, 0, 0});
  add_node(model, "Add", {"zeros", "x"}, {"a"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Add"), 0);
}

TEST(ShapeFolding, AShapeChainOverASymbolicBatchBecomesAConstantShapeWithZero) {
  // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [2, 3])) with x Nx6: the shape is [0, 2, 3]
  // for every N (0 copies x's dimension 0), and the chain goes.
  auto model =
      single_node_model("Reshape", {tensor_value("x", k_float, {-1, 6})}, tensor_value("y", k_float, {-1, 2, 3}));
  model.mutable_graph()->mutable_node(0)->add_input("shape");
  add_initializer(model, "zero", onnx::TensorProto::INT64, {}, {}, {0});
  add_initializer(model, "axes", onnx::TensorProto::INT64, {1}, {}, {0});
  add_initializer(model, "rest", onnx::TensorProto::INT64, {2}, {}, {2, 3});
  add_node(model, "Shape", {"x"}, {"s"});
  add_node(model, "Gather", {"s", "zero"}, {"n"});
  add_node(model, "Unsqueeze", {"n", "axes"}, {"n1"});
  auto* concat = add_node(model, "Concat", {"n1", "rest"}, {"shape"});
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Shape") + count(simplified, "Gather") + count(simplified, "Concat"), 0);
  EXPECT_EQ(count(simplified, "Reshape"), 1);
}

TEST(ShapeFolding, SlicesOfAShapeFoldWhereStaticAndCopyTheDataOwnDimensionsInAReshape) {
  // y = Reshape(x, Concat(Slice(Shape(x), 0, 2), [-1])) * Cast(Slice(Shape(x), -1, 4)), x Nx3x2x2:
  // the first Slice reads x's own leading dimensions ([0, 0, -1]), the second a static one ([2]).
  auto model =
      single_node_model("Mul", {tensor_value("x", k_float, {-1, 3, 2, 2})}, tensor_value("y", k_float, {-1, 3, 4}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "flat");
  model.mutable_graph()->mutable_node(0)->add_input("size");
  for (const auto& [name, value] : {std::pair{"zero", 0}, {"two", 2}, {"last", -1}, {"four", 4}})
    add_initializer(model, name, onnx::TensorProto::INT64, {1}, {}, {value});
  add_node(model, "Shape", {"x"}, {"s"});
  add_node(model, "Slice", {"s", "zero", "two"}, {"leading"});
  add_int(add_node(model, "Concat", {"leading", "last"}, {"shape"}), "axis", 0);
  add_node(model, "Reshape", {"x", "shape"}, {"flat"});
  add_node(model, "Slice", {"s", "last", "four"}, {"width"});
  add_int(add_node(model, "Cast", {"width"}, {"size"}), "to", k_float);
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Shape") + count(simplified, "Slice") + count(simplified, "Concat"), 0);
  EXPECT_EQ(count(simplified, "Reshape"), 1);
  // A Slice that reads the symbolic batch for another position stays.
  auto moved = model;
  moved.mutable_graph()->mutable_node(3)->set_input(0, "last");  // Concat([-1], leading)
  moved.mutable_graph()->mutable_node(3)->set_input(1, "leading");
  *moved.mutable_graph()->mutable_output(0) = tensor_value("y", k_float, {-1, -1, 3});
  EXPECT_EQ(count(simplify_and_prove(moved), "Slice"), 1);
}

// Reshape(x, Concat(Unsqueeze(Mul(Gather(Shape(x), 0), 2)), [width])): ViT's batch * heads.
onnx::ModelProto computed_size_model(std::vector<int64_t> x_dims, int64_t width) {
  auto model = single_node_model("Reshape", {tensor_value("x", k_float, std::move(x_dims))},
                                 tensor_value("y", k_float, {-1, 3}));
  model.mutable_graph()->mutable_node(0)->add_input("shape");
  add_initializer(model, "zero", onnx::TensorProto::INT64, {}, {}, {0});
  add_initializer(model, "axes", onnx::TensorProto::INT64, {1}, {}, {0});
  add_initializer(model, "heads", onnx::TensorProto::INT64, {}, {}, {2});
  add_initializer(model, "width", onnx::TensorProto::INT64, {1}, {}, {width});
  add_node(model, "Shape", {"x"}, {"s"});
  add_node(model, "Gather", {"s", "zero"}, {"n"});
  add_node(model, "Mul", {"n", "heads"}, {"rows"});
  add_node(model, "Unsqueeze", {"rows", "axes"}, {"rows1"});
  add_int(add_node(model, "Concat", {"rows1", "width"}, {"shape"}), "axis", 0);
  return model;
}

TEST(ShapeFolding, OneComputedSizeAmongPositiveConstantsBecomesMinusOne) {
  // x Nx6 to [2N, 3]: 2N is the only size that fits, -1.
  EXPECT_EQ(simplify_and_prove(computed_size_model({-1, 6}, 3)).graph().node_size(), 1);
  // x Nx3x2 to [2N, 0] (0 copies the 3): beside a copy, which an empty x makes 0, it stays.
  EXPECT_EQ(count(simplify_and_prove(computed_size_model({-1, 3, 2}, 0)), "Mul"), 1);
}

TEST(ShapeFolding, AReshapeToTheShapeOfATensorWithOneSymbolicSizeGetsAConstantShape) {
  // Reshape(Relu(Flatten(x)), Shape(x)), x Nx2x3: the shape is [-1, 2, 3] for every N.
  auto model =
      single_node_model("Reshape", {tensor_value("x", k_float, {-1, 2, 3})}, tensor_value("y", k_float, {-1, 2, 3}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "r");
  model.mutable_graph()->mutable_node(0)->add_input("s");
  add_node(model, "Flatten", {"x"}, {"f"});
  add_node(model, "Relu", {"f"}, {"r"});
  add_node(model, "Shape", {"x"}, {"s"});
  EXPECT_EQ(count(simplify_and_prove(model), "Shape"), 0);
  // Two symbolic sizes: the Shape stays.
  *model.mutable_graph()->mutable_input(0) = tensor_value("x", k_float, {-1, -1, 3});
  *model.mutable_graph()->mutable_output(0) = tensor_value("y", k_float, {-1, -1, 3});
  EXPECT_EQ(count(simplify_and_prove(model), "Shape"), 1);
}

// Expand(x, Where(Equal(s, c), [1, 1, 1], s)) with s = Concat(Unsqueeze(Gather(Shape(x), 0)), [2],
// [last]) and c = [compared] * 3: the TorchScript exporter's guard that turns a -1 in expand's
// sizes into 1.

TEST(ShapeFolding, TheExpandGuardOverSizesIsDecidedButNotWhenASizeCouldMatch) {
  // Compared with -1: no size read from Shape is -1, so only the constant -1 becomes 1.
  const auto decided = simplify_and_prove(expand_guard_model(-1, -1));
  EXPECT_EQ(count(decided, "Where") + count(decided, "Equal"), 0);
  EXPECT_EQ(count(decided, "Expand"), 1);
  // Compared with 5: the batch size could be 5, the guard stays.
  const auto open = simplify_and_prove(expand_guard_model(5, 3));
  EXPECT_EQ(count(open, "Where"), 1);
  EXPECT_EQ(count(open, "Equal"), 1);
}

// A rewrite that is exact in arithmetic but not in float32: BatchNormalization folded into a Conv
// whose large bias (1e5) the normalization's mean takes back off. The original rounds the
// convolution at 1e5 before subtracting; the fused Conv skips that rounding. The proof refuses the
// result and names the rule whose skipping makes it hold.
TEST(SimplifyProof, AChangeToTheOutputsNamesTheRuleThatMadeIt) {
  const auto model = conv_batch_norm_model(
      0.01F, {1e5F, 1e5F, 1e5F}, {{1.0F, 1.0F, 1.0F}, {0.0F, 0.0F, 0.0F}, {1e5F, 1e5F, 1e5F}, {1.0F, 1.0F, 1.0F}});
  TempDir dir;
  write_bytes(dir / "model.onnx", model.SerializeAsString());
  auto outcome = simplify_file(dir / "model.onnx", dir / "simplified.onnx", {}, nullptr, {}, false);
  ASSERT_TRUE(outcome) << outcome.error().describe();
  EXPECT_FALSE(outcome->written);
  EXPECT_FALSE(std::filesystem::exists(dir / "simplified.onnx"));
  EXPECT_EQ(outcome->culprit_pass, "fuse-batch-norm-into-conv");
  ASSERT_FALSE(outcome->proof.findings.empty());
  EXPECT_NE(outcome->proof.findings[0].message.find("the rule 'fuse-batch-norm-into-conv' makes the change"),
            std::string::npos)
      << outcome->proof.findings[0].message;
  EXPECT_NE(outcome->proof.findings[0].hint.find("--skip-rule fuse-batch-norm-into-conv"), std::string::npos);
  // Without its pass, the rest of the simplification is proved and written (--skip-pass as before).
  auto without =
      simplify_file(dir / "model.onnx", dir / "simplified.onnx", {.skip_passes = {"fusions"}}, nullptr, {}, true);
  ASSERT_TRUE(without) << without.error().describe();
  EXPECT_TRUE(without->written);
}

// A model the checker rejects is the user's to fix: simplify says the input is invalid before any
// pass runs, instead of a failed proof and a culprit rule.
TEST(SimplifyFile, AnInvalidInputIsNamedAsSuchNotBlamedOnARule) {
  auto model = single_node_model("Relu", {tensor_value("x", onnx::TensorProto::FLOAT, {1, 4})},
                                 tensor_value("y", onnx::TensorProto::FLOAT, {1, 4}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");  // no value defines it
  TempDir dir;
  write_bytes(dir / "bad.onnx", model.SerializeAsString());
  const auto outcome = simplify_file(dir / "bad.onnx", dir / "out.onnx", SimplifyOptions{}, nullptr, ToleranceOptions{},
                                     /*copy_when_unchanged=*/true);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code(), ErrorCode::invalid_input);
  EXPECT_NE(outcome.error().describe().find("the input model is invalid"), std::string::npos)
      << outcome.error().describe();
  EXPECT_FALSE(std::filesystem::exists(dir / "out.onnx"));
}

// A large model's weights no rule changed are not written twice: simplified into its own folder,
// model.sim.onnx refers to the export's data file (compared byte for byte, never assumed) and
// writes none of its own; into another folder it carries its own copy.
TEST(SimplifyFile, TheWeightsNoRuleChangedAreSharedWithTheInputsDataFile) {
  auto model =
      single_node_model("Identity", {tensor_value("x", k_float, {2, 64})}, tensor_value("x1", k_float, {2, 64}));
  add_node(model, "MatMul", {"x1", "W"}, {"y"});
  model.mutable_graph()->clear_output();
  *model.mutable_graph()->add_output() = tensor_value("y", k_float, {2, 32});
  std::vector<float> weights(64 * 32);
  for (std::size_t at = 0; at < weights.size(); ++at) weights[at] = static_cast<float>(at % 7) * 0.25f - 0.5f;
  auto* weight = model.mutable_graph()->add_initializer();
  weight->set_name("W");
  weight->set_data_type(k_float);
  weight->add_dims(64);
  weight->add_dims(32);
  weight->set_raw_data(std::string(reinterpret_cast<const char*>(weights.data()), weights.size() * sizeof(float)));
  TempDir dir;
  ASSERT_TRUE(save_model(model, dir / "model.onnx", SaveOptions{.external = SaveOptions::External::always}));

  const auto same = simplify_file(dir / "model.onnx", dir / "model.sim.onnx", {}, nullptr, {}, false);
  ASSERT_TRUE(same) << same.error().describe();
  ASSERT_TRUE(same->written);
  EXPECT_EQ(same->shared_data, std::vector<std::string>{"model.onnx.data"});
  EXPECT_FALSE(std::filesystem::exists(dir / "model.sim.onnx.data"));
  const auto loaded = load_model(dir / "model.sim.onnx", LoadOptions{.load_external_data = true});
  ASSERT_TRUE(loaded) << loaded.error().describe();
  EXPECT_TRUE(loaded->proto.graph().initializer(0).raw_data() == weight->raw_data());
  EXPECT_EQ(count(loaded->proto, "Identity"), 0);

  std::filesystem::create_directories(dir / "other");
  const auto apart = simplify_file(dir / "model.onnx", dir / "other" / "sim.onnx", {}, nullptr, {}, false);
  ASSERT_TRUE(apart) << apart.error().describe();
  EXPECT_TRUE(apart->shared_data.empty());
  EXPECT_TRUE(std::filesystem::exists(dir / "other" / "sim.onnx.data"));
}
