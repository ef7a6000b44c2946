// The calibrated rule on tensors built in code: the budget follows PyTorch's own distance from the
// float64 answer, at any output scale; argmax differences inside the noise are ties.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "onnxproof/parity/argmax.h"
#include "onnxproof/parity/calibrated.h"
#include "onnxproof/parity/compare.h"

using namespace onnxproof;

namespace {

Tensor floats(std::vector<int64_t> shape, const std::vector<double>& values) {
  std::vector<float> narrow(values.begin(), values.end());
  std::vector<std::byte> bytes(narrow.size() * sizeof(float));
  std::memcpy(bytes.data(), narrow.data(), bytes.size());
  return *Tensor::from_bytes(DType::float32, std::move(shape), std::move(bytes));
}

Tensor doubles(std::vector<int64_t> shape, const std::vector<double>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(double));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return *Tensor::from_bytes(DType::float64, std::move(shape), std::move(bytes));
}

// Values around `scale` that float32 cannot hold exactly.
std::vector<double> values_at(double scale, int count) {
  std::vector<double> values;
  for (int i = 0; i < count; ++i) values.push_back(scale * (0.3 + std::sin(1.7 * i + 0.1)));
  return values;
}

std::vector<double> scaled(std::vector<double> values, double factor) {
  for (auto& v : values) v *= factor;
  return values;
}

TEST(Calibrated, TwentyPercentOffAtOneMillionthFails) {
  // The fixed rule's atol 1e-5 hides any error at this scale; the calibrated one does not.
  const auto exact_values = values_at(1e-6, 32);
  const Tensor exact = doubles({32}, exact_values);
  const Tensor pytorch = floats({32}, exact_values);
  const Tensor wrong = floats({32}, scaled(exact_values, 1.2));
  EXPECT_TRUE(compare_tensors(pytorch, wrong).allclose) << "the fixed rule should be blind here";
  ExactDeviation deviation;
  const auto result = compare_calibrated(pytorch, exact, wrong, 0.0, deviation);
  EXPECT_FALSE(result.allclose);
  EXPECT_GT(*deviation.ratio(), 1e4);
}

// The float16 variant: rounding to float16 (about 5e-4 relative) is far outside float32's budget
// and inside the float16 one, scaled by epsilon(float16) / epsilon(float32) = 8192; a 2% error is
// outside both.
TEST(Calibrated, Float16PrecisionWidensTheBudgetByTheEpsilonRatio) {
  const auto scale = precision_scale(DType::float32, DType::float16);
  EXPECT_DOUBLE_EQ(scale.noise, 8192.0);
  EXPECT_EQ(scale.floor_dtype, DType::float16);
  EXPECT_DOUBLE_EQ(precision_scale(DType::float32, DType::undefined).noise, 1.0);
  EXPECT_DOUBLE_EQ(precision_scale(DType::float32, DType::float32).noise, 1.0);

  const auto exact_values = values_at(1.0, 64);
  const Tensor exact = doubles({64}, exact_values);
  const Tensor pytorch = floats({64}, exact_values);
  std::vector<double> half_values;
  for (const double v : exact_values) half_values.push_back(half_to_float(float_to_half(static_cast<float>(v))));
  const Tensor half = floats({64}, half_values);
  ExactDeviation deviation;
  EXPECT_FALSE(compare_calibrated(pytorch, exact, half, 0.0, deviation).allclose);
  EXPECT_TRUE(compare_calibrated(pytorch, exact, half, 0.0, deviation, DType::float16).allclose);
  const Tensor wrong = floats({64}, scaled(exact_values, 1.02));
  EXPECT_FALSE(compare_calibrated(pytorch, exact, wrong, 0.0, deviation, DType::float16).allclose);
}

TEST(Calibrated, SameRoundingAsPyTorchPassesAtAnyScale) {
  for (const double scale : {1e-9, 1e-6, 1.0, 1e4}) {
    const auto exact_values = values_at(scale, 64);
    const Tensor exact = doubles({64}, exact_values);
    const Tensor pytorch = floats({64}, exact_values);
    // ONNX Runtime one float32 step away from PyTorch on every element: rounding noise.
    std::vector<double> onnx_values;
    for (double v : exact_values) onnx_values.push_back(std::nextafter(static_cast<float>(v), 1e30F));
    ExactDeviation deviation;
    const auto result = compare_calibrated(pytorch, exact, floats({64}, onnx_values), 0.0, deviation);
    EXPECT_TRUE(result.allclose) << "scale " << scale << ": onnx " << deviation.onnx << " budget " << deviation.budget;
  }
}

TEST(Calibrated, LargeOutputWithPyTorchsOwnNoiseLevelPasses) {
  // PyTorch is 4e-5 off the exact answer at scale 50 (accumulation order); ONNX Runtime 1.5x that.
  // The fixed rule calls it a miss at the small elements; the calibrated rule does not.
  std::vector<double> exact_values = {50.0, 0.004, -20.0, 0.0021};
  std::vector<double> pytorch_values = {50.00004, 0.00404, -20.0, 0.0021};
  std::vector<double> onnx_values = {49.99994, 0.00406, -20.00003, 0.0021};
  ExactDeviation deviation;
  const auto result = compare_calibrated(floats({4}, pytorch_values), doubles({4}, exact_values),
                                         floats({4}, onnx_values), 0.0, deviation);
  EXPECT_TRUE(result.allclose);
  EXPECT_FALSE(compare_tensors(floats({4}, pytorch_values), floats({4}, onnx_values)).allclose);
  EXPECT_NEAR(*deviation.ratio(), 1.5, 0.1);
}

TEST(Calibrated, PooledNoiseKeepsALuckyExactCaseFromShrinkingTheBudget) {
  const auto exact_values = values_at(1.0, 16);
  const Tensor exact = doubles({16}, exact_values);
  const Tensor pytorch = floats({16}, exact_values);
  const Tensor onnx = floats({16}, scaled(exact_values, 1.0 + 2e-6));
  ExactDeviation alone;
  EXPECT_FALSE(compare_calibrated(pytorch, exact, onnx, 0.0, alone).allclose);
  ExactDeviation pooled;
  EXPECT_TRUE(compare_calibrated(pytorch, exact, onnx, 1e-6, pooled).allclose);
}

TEST(Calibrated, NaNWherePyTorchIsFiniteFails) {
  const Tensor exact = doubles({2}, {1.0, 2.0});
  const Tensor pytorch = floats({2}, {1.0, 2.0});
  ExactDeviation deviation;
  const auto result = compare_calibrated(pytorch, exact, floats({2}, {1.0, NAN}), 0.0, deviation);
  EXPECT_FALSE(result.allclose);
  EXPECT_EQ(result.nan_mismatches, 1);
}

TEST(CalibratedArgmax, DifferenceInsideTheNoiseIsATieAndBeyondItAFlip) {
  // Row 0: exact margin 1e-9 between classes 0 and 1, far inside the noise: a tie.
  // Row 1: exact margin 0.3: ONNX Runtime picking class 2 is a flip.
  const Tensor exact = doubles({2, 3}, {0.5 + 1e-9, 0.5, 0.1, 0.2, 0.1, 0.5});
  const Tensor pytorch = floats({2, 3}, {0.5000001, 0.5, 0.1, 0.2, 0.1, 0.5});
  const Tensor onnx = floats({2, 3}, {0.5, 0.5000001, 0.1, 0.2, 0.1, 0.1});
  const auto check = check_argmax(pytorch, onnx, ArgmaxNoise{exact, 1e-7, 1e-7});
  ASSERT_TRUE(check);
  EXPECT_EQ(check->ties, 1);
  EXPECT_EQ(check->flips, 1);
  EXPECT_EQ(check->first_flip_row, 1);
}

TEST(CalibratedArgmax, SegmentationComparesClassesPerPixel) {
  // 1x3x1x2: classes on axis 1; pixel 1's top class differs by a real margin.
  const Tensor exact = doubles({1, 3, 1, 2}, {0.9, 0.1, 0.05, 0.8, 0.05, 0.1});
  const Tensor pytorch = floats({1, 3, 1, 2}, {0.9, 0.1, 0.05, 0.8, 0.05, 0.1});
  const Tensor onnx = floats({1, 3, 1, 2}, {0.9, 0.1, 0.05, 0.0, 0.05, 0.1});
  const auto check = check_argmax(pytorch, onnx, ArgmaxNoise{exact, 0.0, 0.8});
  ASSERT_TRUE(check);
  EXPECT_EQ(check->rows, 2);
  EXPECT_EQ(check->flips, 0) << "margin 0.7 is inside ONNX's own deviation 0.8: a tie";
  const auto strict = check_argmax(pytorch, onnx, ArgmaxNoise{exact, 0.0, 0.1});
  EXPECT_EQ(strict->flips, 1);
}

TEST(Evidence, ConstantOutputIsWeak) {
  EXPECT_NE(weak_evidence_reason({{1e-9, 1e-9 + 1e-18, 1e-9, 1e-16}, {1e-9, 1e-9, 1e-9, 1e-16}}, std::nullopt), "");
}

TEST(Evidence, OutputWhoseOnePercentChangeFitsTheBudgetIsWeak) {
  // The fixed rule at scale 1e-4: atol 1e-5 swallows a 1% change.
  EXPECT_NE(weak_evidence_reason({{-1e-4, 1e-4, 1e-4, 1e-5 + 1e-7}}, std::nullopt), "");
}

TEST(Evidence, VaryingOutputWithATightBudgetIsStrong) {
  EXPECT_EQ(weak_evidence_reason({{-2.0, 3.0, 3.0, 1e-6}, {-1.0, 2.5, 2.5, 1e-6}}, 0.5), "");
}

TEST(Evidence, OutputThatIgnoresItsInputsIsWeak) {
  // Values spread over classes (a bias), the same for every input.
  EXPECT_NE(weak_evidence_reason({{1e-9, 2e-9, 2e-9, 1e-15}}, 1e-17), "");
}

}  // namespace

namespace {

TEST(ClassScores, DecidedByNameAndRank) {
  EXPECT_TRUE(is_class_scores("logits", {2, 16, 1000}));  // token logits
  EXPECT_TRUE(is_class_scores("output_0", {8, 10}));      // an unnamed classifier's (batch, classes)
  EXPECT_TRUE(is_class_scores("out", {1, 21, 64, 64}));   // torchvision segmentation, per pixel
  EXPECT_FALSE(is_class_scores("last_hidden_state", {2, 16, 64}));
  EXPECT_FALSE(is_class_scores("sentence_embedding", {2, 64}));
  EXPECT_FALSE(is_class_scores("output_0", {1, 64, 7, 7}));  // a feature map
  EXPECT_FALSE(is_class_scores("logits", {10}));
}

TEST(PooledRule, CaseWithoutItsOwnFloat64RunUsesTheMedianNoise) {
  const auto values = values_at(1.0, 16);
  const Tensor pytorch = floats({16}, values);
  ExactDeviation deviation;
  // Noise 1e-6 of the scale: ONNX Runtime 5e-6 away from PyTorch passes, 5e-4 away fails.
  EXPECT_TRUE(compare_pooled(pytorch, floats({16}, scaled(values, 1.0 + 5e-6)), 1e-6, deviation).allclose);
  EXPECT_FALSE(compare_pooled(pytorch, floats({16}, scaled(values, 1.0 + 5e-4)), 1e-6, deviation).allclose);
  EXPECT_GT(deviation.budget, 0.0);
}

}  // namespace

namespace {

TEST(ExactRule, IntegerMismatchReportsItsLargestDifference) {
  const auto ints = [](std::vector<int64_t> values) {
    std::vector<std::byte> bytes(values.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return *Tensor::from_bytes(DType::int64, {static_cast<int64_t>(values.size())}, std::move(bytes));
  };
  const auto result = compare_tensors(ints({1, -5, 7}), ints({1, -4, 7}));
  EXPECT_FALSE(result.allclose);
  EXPECT_EQ(result.mismatches, 1);
  EXPECT_EQ(result.max_abs, 1.0);
  EXPECT_EQ(result.worst_index, 1);
}

}  // namespace

// A sum that cancels to 0.027 in one case rounds at the magnitude of what it summed (about 1, as
// in the output's other cases): one float32 unit there (6e-8) is over this case's own floor and
// within the floor of the output's median scale; a 1% error stays outside both.
TEST(Calibrated, TheFloorIsOfTheOutputsTypicalScaleWhenACaseCancels) {
  const std::vector<double> exact_values = {0.0273};
  const Tensor exact = doubles({1}, exact_values);
  const Tensor pytorch = floats({1}, exact_values);  // PyTorch's sum happened to land on exact
  const Tensor rounded = floats({1}, {0.0273 + 5.96e-8});
  ExactDeviation deviation;
  EXPECT_FALSE(compare_calibrated(pytorch, exact, rounded, 0.0, deviation).allclose);
  EXPECT_TRUE(compare_calibrated(pytorch, exact, rounded, 0.0, deviation, DType::undefined, 1.5).allclose);
  EXPECT_DOUBLE_EQ(deviation.floor_scale, 1.5);
  const Tensor wrong = floats({1}, {0.0273 * 1.01});
  EXPECT_FALSE(compare_calibrated(pytorch, exact, wrong, 0.0, deviation, DType::undefined, 1.5).allclose);
}
