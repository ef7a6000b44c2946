// The finding-code registry: data/finding_codes.json is the one source. C++ can only name a
// registered code (FindingCode is generated from it); these tests hold the rest of the contract:
// the generated table matches the file, every code is documented in docs/finding-codes.md, and findings
// read from the front end with an unknown code are refused.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "onnxproof/core/finding.h"

namespace onnxproof {
namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream file(std::string(ONNXPROOF_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(FindingCodes, GeneratedTableMatchesTheRegistryFile) {
  const auto registry = nlohmann::json::parse(read_source_file("data/finding_codes.json"));
  const auto& codes = registry.at("codes");
  ASSERT_EQ(codes.size(), finding_codes().size());
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const auto& info = finding_codes()[i];
    EXPECT_EQ(info.name, codes[i].at("code").get<std::string>());
    EXPECT_EQ(severity_name(info.severity), codes[i].at("severity").get<std::string>());
    EXPECT_FALSE(info.meaning.empty()) << info.name;
    EXPECT_EQ(finding_code_from_name(info.name), info.code);
    EXPECT_TRUE(names.insert(info.name).second) << "registered twice: " << info.name;
  }
}

TEST(FindingCodes, EveryCodeIsListedInTheDocs) {
  const std::string readme = read_source_file("docs/finding-codes.md");
  for (const auto& info : finding_codes())
    EXPECT_NE(readme.find("`" + std::string(info.name) + "`"), std::string::npos) << info.name;
}

TEST(FindingCodes, AFindingWithAnUnregisteredCodeIsRefusedNamingTheField) {
  const nlohmann::json finding = {
      {"code", "MADE_UP_CODE"}, {"severity", "error"}, {"step", "export"}, {"message", "m"}};
  const auto read = finding_from_json(finding, "export.json: findings[3]");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().describe().find("export.json: findings[3].code 'MADE_UP_CODE'"), std::string::npos)
      << read.error().describe();
}

TEST(FindingCodes, FindingsRoundTripThroughJsonWithTheirEvidence) {
  const Finding original{FindingCode::frozen_dimension,
                         Severity::warning,
                         "check",
                         "message",
                         "node",
                         "hint",
                         {.axis = "batch", .sizes = {{"batch", 3}}, .source = "model.py:12"}};
  const auto read = finding_from_json(finding_to_json(original), "test");
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(read->code, original.code);
  EXPECT_EQ(read->severity, original.severity);
  EXPECT_EQ(read->evidence.axis, "batch");
  EXPECT_EQ(read->evidence.sizes, original.evidence.sizes);
  EXPECT_EQ(read->evidence.source, "model.py:12");
  const auto missing = finding_from_json({{"code", "FROZEN_DIMENSION"}, {"severity", "error"}}, "x");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().describe().find("x.step is missing"), std::string::npos);
}

}  // namespace
}  // namespace onnxproof
