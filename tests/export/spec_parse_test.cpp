#include <gtest/gtest.h>

#include "onnxproof/export/export_step.h"
#include "onnxproof/pipeline/pipeline.h"

using namespace onnxproof;

namespace {

TEST(InputSpec, ParsesNameDimsDtypeAndRange) {
  auto spec = parse_input_spec("ids=2x16:int64:0..30522");
  ASSERT_TRUE(spec) << spec.error().describe();
  EXPECT_EQ(spec->name, "ids");
  EXPECT_EQ(spec->dims, (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(spec->dtype, "int64");
  ASSERT_TRUE(spec->range);
  EXPECT_EQ(spec->range->second, 30522);
  EXPECT_EQ(parse_input_spec("x=1x3:float")->dtype, "float32");  // aliases are normalized
  EXPECT_TRUE(parse_input_spec("s=scalar:float32")->dims.empty());
}

TEST(InputSpec, MalformedSpecsAreUsageErrors) {
  for (const char* bad : {"x", "=1x3:float32", "x=1x3", "x=1xAx3:float32", "x=1x-3:float32", "x=1x3:float128",
                          "x=1x3:int64:9..2", "x=1x3:int64:0-9"}) {
    auto spec = parse_input_spec(bad);
    ASSERT_FALSE(spec) << bad;
    EXPECT_EQ(spec.error().code(), ErrorCode::usage) << bad;
    EXPECT_NE(spec.error().describe().find(bad), std::string::npos) << spec.error().describe();
  }
}

TEST(DynamicAxis, ParsesAndRejects) {
  auto axis = parse_dynamic_axis("input_ids:1=sequence");
  ASSERT_TRUE(axis);
  EXPECT_EQ(axis->input, "input_ids");
  EXPECT_EQ(axis->axis, 1);
  EXPECT_EQ(axis->label, "sequence");
  EXPECT_FALSE(axis->range);
  for (const char* bad : {"x0=batch", "x:a=batch", "x:0=", ":0=batch", "x:-1=batch", "x:0=batch:0..8", "x:0=batch:9..8",
                          "x:0=batch:1-8", "x:0=:1..8"})
    EXPECT_FALSE(parse_dynamic_axis(bad)) << bad;
}

TEST(DynamicAxis, RangeBoundsTheLabelAndTheSizesItIsProvedAt) {
  auto axis = parse_dynamic_axis("x:0=batch:1..64");
  ASSERT_TRUE(axis);
  EXPECT_EQ(axis->label, "batch");
  ASSERT_TRUE(axis->range);
  EXPECT_EQ(*axis->range, (std::pair<int64_t, int64_t>{1, 64}));

  ExportOptions options;
  options.model = "m.py:make";
  options.out = "out";
  options.inputs = {*parse_input_spec("x=2x8:float32"), *parse_input_spec("y=2x8:float32")};
  options.dynamic = {*axis};
  EXPECT_TRUE(validate_export_options(options));
  options.sweep["batch"] = {1, 65};
  auto refused = validate_export_options(options);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().describe().find("65 is outside the range 1..64"), std::string::npos);
  options.sweep.clear();
  options.dynamic.push_back(*parse_dynamic_axis("y:0=batch:2..64"));
  refused = validate_export_options(options);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().describe().find("two ranges"), std::string::npos);
  options.dynamic = {*parse_dynamic_axis("x:0=batch:4..64")};
  refused = validate_export_options(options);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().describe().find("outside the range 4..64"), std::string::npos);
}

TEST(Sweep, ParsesSizesAndRejectsZero) {
  auto sweep = parse_sweep("batch=1,3,8");
  ASSERT_TRUE(sweep);
  EXPECT_EQ(sweep->second, (std::vector<int64_t>{1, 3, 8}));
  EXPECT_FALSE(parse_sweep("batch=0,2"));
  EXPECT_FALSE(parse_sweep("batch="));
}

}  // namespace

TEST(ModelSpec, FamiliesBringTheirInputsAndNameTheirRunFolder) {
  EXPECT_TRUE(is_model_family("hf:BertModel"));
  EXPECT_TRUE(is_model_family("timm:convnext_atto"));
  EXPECT_FALSE(is_model_family("models/hf.py:build"));
  EXPECT_EQ(default_run_folder("hf:T5ForConditionalGeneration:num_layers=1"),
            std::filesystem::path("onnxproof-out/T5ForConditionalGeneration"));
  EXPECT_EQ(default_run_folder("timm:convnext_atto"), std::filesystem::path("onnxproof-out/convnext_atto"));
  EXPECT_EQ(default_run_folder("torchvision:resnet18"), std::filesystem::path("onnxproof-out/resnet18"));
}
