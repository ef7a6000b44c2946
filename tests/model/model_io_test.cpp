#include <gtest/gtest.h>

#include <fstream>

#include "onnxproof/model/model_io.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;
namespace fs = std::filesystem;

namespace {

void write_model(const onnx::ModelProto& model, const fs::path& path) { write_bytes(path, model.SerializeAsString()); }

TEST(LoadModel, LoadsAValidModel) {
  TempDir dir;
  write_model(matmul_model(4, 2), dir / "m.onnx");
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded) << loaded.error().describe();
  EXPECT_EQ(loaded->proto.graph().node(0).op_type(), "MatMul");
  EXPECT_EQ(loaded->folder, fs::canonical(dir.path()));
}

TEST(LoadModel, MissingFileIsNotFound) {
  auto loaded = load_model("/nonexistent/model.onnx");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), ErrorCode::not_found);
}

TEST(LoadModel, TextFileIsNotAModel) {
  TempDir dir;
  write_bytes(dir / "m.onnx", "hello, this is a text file\n");
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), ErrorCode::invalid_input);
}

TEST(LoadModel, EmptyFileIsNotAModel) {
  TempDir dir;
  write_bytes(dir / "m.onnx", "");
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().describe().find("not an ONNX model"), std::string::npos);
}

TEST(LoadModel, TruncatedModelIsAnError) {
  TempDir dir;
  const std::string bytes = matmul_model(64, 64).SerializeAsString();
  write_bytes(dir / "m.onnx", bytes.substr(0, bytes.size() / 2));
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().describe().find("protobuf parse failed"), std::string::npos) << loaded.error().describe();
}

TEST(LoadModel, SizeLimitIsCheckedBeforeReading) {
  TempDir dir;
  write_model(matmul_model(64, 64), dir / "m.onnx");
  auto loaded = load_model(dir / "m.onnx", LoadOptions{.max_model_bytes = 100});
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), ErrorCode::limit_exceeded);
}

TEST(ExternalData, InsideTheFolderIsValidatedAndLoadedOnRequest) {
  TempDir dir;
  write_model(model_with_external_weight("weights.bin"), dir / "m.onnx");
  write_bytes(dir / "weights.bin", std::string(32, '\x01'));
  auto lazy = load_model(dir / "m.onnx");
  ASSERT_TRUE(lazy) << lazy.error().describe();
  EXPECT_EQ(lazy->external_bytes, 32U);
  EXPECT_EQ(lazy->proto.graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);

  auto loaded = load_model(dir / "m.onnx", LoadOptions{.load_external_data = true});
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->proto.graph().initializer(0).raw_data(), std::string(32, '\x01'));
}

struct HostileLocation {
  std::string location;
  std::string expected_message;
};

class HostileExternalData : public ::testing::TestWithParam<HostileLocation> {};

TEST_P(HostileExternalData, IsRefusedWithAClearMessage) {
  TempDir dir;
  fs::create_directories(dir / "model");
  write_bytes(dir / "secret.bin", std::string(32, 's'));
  fs::create_symlink(dir / "secret.bin", dir / "model" / "link.bin");
  write_model(model_with_external_weight(GetParam().location), dir / "model" / "m.onnx");
  auto loaded = load_model(dir / "model" / "m.onnx", LoadOptions{.load_external_data = true});
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), ErrorCode::invalid_input);
  EXPECT_NE(loaded.error().describe().find(GetParam().expected_message), std::string::npos)
      << loaded.error().describe();
}

INSTANTIATE_TEST_SUITE_P(LoadModel, HostileExternalData,
                         ::testing::Values(HostileLocation{"../secret.bin", "escapes the model's folder"},
                                           HostileLocation{"/etc/passwd", "is an absolute path"},
                                           HostileLocation{"link.bin", "leaves the model's folder"}),
                         [](const auto& param_info) { return std::to_string(param_info.index); });

TEST(ExternalData, ShorterFileThanDeclaredIsAnError) {
  TempDir dir;
  write_model(model_with_external_weight("weights.bin"), dir / "m.onnx");
  write_bytes(dir / "weights.bin", std::string(16, '\x01'));
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().describe().find("shorter than offset + length"), std::string::npos)
      << loaded.error().describe();
}

TEST(ExternalData, MissingFileIsNotFound) {
  TempDir dir;
  write_model(model_with_external_weight("weights.bin"), dir / "m.onnx");
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), ErrorCode::not_found);
}

TEST(SaveModel, WritesAtomicallyAndLeavesNoTemporaryFiles) {
  TempDir dir;
  auto model = matmul_model(4, 2);
  ASSERT_TRUE(save_model(model, dir / "m.onnx"));
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(loaded->proto.SerializeAsString() == model.SerializeAsString());
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(SaveModel, ExternalDataRoundTripsAndLeavesTheModelUnchanged) {
  TempDir dir;
  auto model = matmul_model(64, 32);
  const std::string before = model.SerializeAsString();
  ASSERT_TRUE(save_model(model, dir / "m.onnx", SaveOptions{.external = SaveOptions::External::always}));
  EXPECT_TRUE(model.SerializeAsString() == before) << "save_model changed the model";
  EXPECT_EQ(fs::file_size(dir / "m.onnx.data"), 64U * 32U * 4U);
  EXPECT_LT(fs::file_size(dir / "m.onnx"), 1000U);

  auto loaded = load_model(dir / "m.onnx", LoadOptions{.load_external_data = true});
  ASSERT_TRUE(loaded) << loaded.error().describe();
  EXPECT_TRUE(loaded->proto.graph().initializer(0).raw_data() == model.graph().initializer(0).raw_data());
}

TEST(SaveModel, MissingFolderIsAnErrorNotACrash) {
  auto model = matmul_model(4, 2);
  auto saved = save_model(model, "/nonexistent/folder/m.onnx");
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code(), ErrorCode::io);
}

// A model whose If branches nest 300 deep passes protobuf's recursion limit: one line that says
// so (it was reported as "truncated").
TEST(LoadModel, SubgraphsNestedPastTheLimitAreNamedAsSuch) {
  auto model = if_model_with_constant_branches(false);
  onnx::GraphProto inner = model.graph();
  for (int depth = 0; depth < 300; ++depth) {
    onnx::GraphProto outer = model.graph();
    *outer.mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(0) = onnx::NodeProto();
    auto* holder = outer.mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(0);
    holder->set_op_type("If");
    holder->add_input("cond");
    holder->add_output("then_branch_out");
    auto* branch = holder->add_attribute();
    branch->set_name("then_branch");
    branch->set_type(onnx::AttributeProto::GRAPH);
    *branch->mutable_g() = inner;
    inner = std::move(outer);
  }
  *model.mutable_graph() = inner;
  TempDir dir;
  write_bytes(dir / "deep.onnx", model.SerializeAsString());
  const auto loaded = load_model(dir / "deep.onnx");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().describe().find("nest deeper than 100 levels"), std::string::npos)
      << loaded.error().describe();
  const auto parsed = parse_model(model.SerializeAsString(), "deep");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().describe().find("nest deeper than 100 levels"), std::string::npos);
}

// Nesting far past what a second, deeper parse could reach (the retry once stopped at 10,000
// levels, past which it said "truncated"): measured without recursion, named as nesting.
std::string varint(uint64_t value) {
  std::string out;
  do {
    out += static_cast<char>((value & 0x7f) | (value > 0x7f ? 0x80 : 0));
    value >>= 7;
  } while (value);
  return out;
}

// ModelProto.graph -> GraphProto.node -> NodeProto.attribute -> AttributeProto.g -> ..., `levels`
// times (three messages a level), built from the inside out.
std::string nested_subgraph_bytes(int levels) {
  std::vector<std::string> prefixes;
  std::size_t length = 0;
  for (int level = 0; level < levels; ++level) {
    const std::string attribute = "\x0a\x01g\x32" + varint(length);                      // name, g
    const std::string node = "\x22\x02If\x2a" + varint(attribute.size() + length);       // op_type, attribute
    const std::string graph = "\x0a" + varint(node.size() + attribute.size() + length);  // node
    length += graph.size() + node.size() + attribute.size();
    prefixes.push_back(graph + node + attribute);
  }
  std::string body;
  for (auto it = prefixes.rbegin(); it != prefixes.rend(); ++it) body += *it;
  return std::string("\x08\x08\x3a", 3) + varint(body.size()) + body;
}

TEST(LoadModel, NestingFarPastTheLimitIsNamedNotCalledTruncated) {
  TempDir dir;
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"deep.onnx", nested_subgraph_bytes(7000)},
                                    {"groups.onnx", std::string(100000, '\x0b')}}) {
    write_bytes(dir / name, bytes);
    const auto loaded = load_model(dir / name);
    ASSERT_FALSE(loaded) << name;
    EXPECT_NE(loaded.error().describe().find("nest deeper than 100 levels"), std::string::npos)
        << loaded.error().describe();
    const auto parsed = parse_model(bytes, name);
    ASSERT_FALSE(parsed) << name;
    EXPECT_NE(parsed.error().describe().find("nest deeper than 100 levels"), std::string::npos);
  }
  // Damage is still damage: the same bytes cut short within the first levels.
  const std::string cut = nested_subgraph_bytes(50).substr(0, 40);
  const auto parsed = parse_model(cut, "cut");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().describe().find("truncated"), std::string::npos) << parsed.error().describe();
}

// Found by fuzz_model_loader: an end-group tag of field 0 closed the measurement's root level and
// the next step read past its stack. Field 0 is no wire format, so it is damage like any other.
TEST(LoadModel, AnEndGroupOfFieldZeroIsDamageNotAReadPastTheStack) {
  for (const std::string& bytes :
       {std::string("\x04", 1), std::string("\x03\x04", 2), std::string("\x08\x01\x04", 3)}) {
    const auto parsed = parse_model(bytes, "field0");
    ASSERT_FALSE(parsed);
    EXPECT_EQ(parsed.error().code(), ErrorCode::invalid_input) << parsed.error().describe();
  }
}

}  // namespace
