#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "onnxproof/parity/argmax.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/parity/tolerance.h"

using namespace onnxproof;

namespace {

Tensor floats(std::vector<float> values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return *Tensor::from_bytes(DType::float32, {static_cast<int64_t>(values.size())}, std::move(bytes));
}

TEST(Compare, WithinToleranceIsAllclose) {
  const auto result = compare_tensors(floats({1.0F, 100.0F}), floats({1.0005F, 100.09F}));
  EXPECT_TRUE(result.allclose) << result.describe();
  EXPECT_NEAR(result.max_abs, 0.09, 1e-4);
}

TEST(Compare, OutsideToleranceCountsMismatchesAndFindsTheWorst) {
  const auto result = compare_tensors(floats({1.0F, 2.0F, 3.0F}), floats({1.0F, 2.5F, 3.01F}));
  EXPECT_FALSE(result.allclose);
  EXPECT_EQ(result.mismatches, 2);
  EXPECT_EQ(result.worst_index, 1);
  EXPECT_NEAR(result.max_rel, 0.25, 1e-6);
}

TEST(Compare, NanMatchesNanButNotANumber) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(compare_tensors(floats({nan, 1.0F}), floats({nan, 1.0F})).allclose);
  const auto result = compare_tensors(floats({nan, 1.0F}), floats({0.0F, 1.0F}));
  EXPECT_FALSE(result.allclose);
  EXPECT_EQ(result.nan_mismatches, 1);
}

TEST(Compare, InfinitiesMustHaveTheSameSign) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare_tensors(floats({inf}), floats({inf})).allclose);
  EXPECT_FALSE(compare_tensors(floats({inf}), floats({-inf})).allclose);
}

TEST(Compare, IntegersAreExact) {
  auto a = *Tensor::zeros(DType::int64, {3});
  auto b = *Tensor::zeros(DType::int64, {3});
  b.mutable_values<int64_t>()[2] = 1;
  EXPECT_FALSE(compare_tensors(a, b).allclose);
  // 2^53 + 1 differs from 2^53 although both round to the same double.
  a.mutable_values<int64_t>()[0] = (int64_t{1} << 53) + 1;
  b.mutable_values<int64_t>()[0] = int64_t{1} << 53;
  b.mutable_values<int64_t>()[2] = 0;
  EXPECT_FALSE(compare_tensors(a, b).allclose);
}

TEST(Compare, ShapeAndDtypeDifferencesFail) {
  EXPECT_FALSE(compare_tensors(floats({1, 2}), floats({1, 2, 3})).shape_match);
  EXPECT_FALSE(compare_tensors(floats({1}), *Tensor::zeros(DType::float64, {1})).dtype_match);
}

}  // namespace

namespace {

Tensor logits(std::vector<int64_t> shape, std::vector<float> values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return *Tensor::from_bytes(DType::float32, std::move(shape), std::move(bytes));
}

// A logit of 1e-3 where the row's logits reach 20: float32 rounding of the large terms that
// cancel there moves it by 2e-5, which element-wise allclose (budget 1e-5 + 1e-6) calls a mismatch.
TEST(CompareAtScale, RoundingOfAValueNearZeroIsWithinTheOutputsBudget) {
  const Tensor expected = floats({20.0F, -7.5F, 1e-3F});
  const Tensor actual = floats({20.0002F, -7.5F, 1.02e-3F});
  EXPECT_FALSE(compare_tensors(expected, actual).allclose);
  const auto result = compare_at_scale(expected, actual, 1e-3);
  EXPECT_TRUE(result.allclose) << result.describe();
  EXPECT_NEAR(result.max_abs, 2e-4, 1e-5);
}

TEST(CompareAtScale, ADifferenceOverTheBudgetAtTheScaleFailsAndIsLocated) {
  // The small element's budget is 1e-3 x 1% of the scale 20 = 2e-4: 0.05 there is a defect.
  const auto result = compare_at_scale(floats({20.0F, 0.01F, 3.0F}), floats({20.0F, 0.06F, 3.0F}), 1e-3);
  EXPECT_FALSE(result.allclose);
  EXPECT_EQ(result.mismatches, 1);
  EXPECT_EQ(result.worst_index, 1);
}

TEST(CompareAtScale, AnOutputOfSmallScaleIsNotBlind) {
  // Values of 1e-6: atol 1e-5 lets element-wise allclose accept a 10% change; relative to the
  // output's own scale it is a mismatch.
  const Tensor expected = floats({1e-6F, 2e-6F, -3e-6F});
  const Tensor actual = floats({1.1e-6F, 2e-6F, -3e-6F});
  EXPECT_TRUE(compare_tensors(expected, actual).allclose);
  EXPECT_FALSE(compare_at_scale(expected, actual, 1e-3).allclose);
  EXPECT_TRUE(compare_at_scale(expected, floats({1.0000001e-6F, 2e-6F, -3e-6F}), 1e-3).allclose);
}

TEST(CompareAtScale, NanDifferencesShapesAndIntegersStayAsStrict) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto result = compare_at_scale(floats({nan, 1.0F}), floats({0.0F, 1.0F}), 1e-3);
  EXPECT_FALSE(result.allclose);
  EXPECT_EQ(result.nan_mismatches, 1);
  EXPECT_FALSE(compare_at_scale(floats({1.0F}), floats({1.0F, 1.0F}), 1e-3).shape_match);
  auto a = *Tensor::zeros(DType::int64, {2});
  auto b = *Tensor::zeros(DType::int64, {2});
  b.mutable_values<int64_t>()[1] = 1;
  EXPECT_FALSE(compare_at_scale(a, b, 1.0).allclose);
}

TEST(CompareAtScale, TheUsersFiguresStillCompareElementByElement) {
  const Tensor expected = floats({20.0F, 1e-3F});
  const Tensor actual = floats({20.0F, 1.02e-3F});
  ToleranceOptions defaults;
  EXPECT_TRUE(defaults.compare("logits", expected, actual).allclose);
  ToleranceOptions user;
  user.rtol = 1e-3;  // the defaults' figures, but the user's: assert_allclose semantics
  EXPECT_FALSE(user.compare("logits", expected, actual).allclose);
}

TEST(Argmax, FlipIsCountedEvenWhenAllcloseWouldPass) {
  // Row 1 is a near tie: 0.50001 vs 0.50000 swaps places, well inside rtol 1e-3.
  const auto torch = logits({2, 2}, {0.1F, 0.9F, 0.50001F, 0.5F});
  const auto onnx = logits({2, 2}, {0.1F, 0.9F, 0.5F, 0.50001F});
  EXPECT_TRUE(compare_tensors(torch, onnx).allclose);
  const auto check = check_argmax(torch, onnx);
  ASSERT_TRUE(check);
  EXPECT_EQ(check->rows, 2);
  EXPECT_EQ(check->flips, 1);
  EXPECT_EQ(check->first_flip_row, 1);
  EXPECT_NEAR(check->min_margin, 1e-5, 1e-6);
}

TEST(Argmax, TieInPyTorchsRowIsNoFlip) {
  // Row 0 ties in PyTorch (0.7 and 0.7): ONNX Runtime picking the second is no flip. Row 1 is one.
  const auto torch = logits({2, 3}, {0.7F, 0.7F, 0.1F, 0.2F, 0.9F, 0.1F});
  const auto onnx = logits({2, 3}, {0.69F, 0.7F, 0.1F, 0.9F, 0.2F, 0.1F});
  const auto check = check_argmax(torch, onnx);
  ASSERT_TRUE(check);
  EXPECT_EQ(check->flips, 1);
  EXPECT_EQ(check->first_flip_row, 1);
}

TEST(Argmax, ARowOfNanIsNoFlipButAFiniteRowStillIs) {
  // Row 0 overflowed to NaN in ONNX Runtime (NAN_OR_INF's finding, not an argmax flip); row 1 flips.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto torch = logits({2, 2}, {0.1F, 0.9F, 0.9F, 0.1F});
  const auto onnx = logits({2, 2}, {nan, nan, 0.1F, 0.9F});
  const auto check = check_argmax(torch, onnx);
  ASSERT_TRUE(check);
  EXPECT_EQ(check->flips, 1);
  EXPECT_EQ(check->first_flip_row, 1);
}

TEST(Argmax, DoesNotApplyToIntegersOrSingleClassOutputs) {
  EXPECT_FALSE(check_argmax(*Tensor::zeros(DType::int64, {2, 3}), *Tensor::zeros(DType::int64, {2, 3})));
  EXPECT_FALSE(check_argmax(logits({3, 1}, {1, 2, 3}), logits({3, 1}, {1, 2, 3})));
}

TEST(Tolerance, PerOutputBeatsGlobalBeatsPerDtypeDefault) {
  ToleranceOptions options;
  EXPECT_EQ(options.resolve("y", DType::float16).rtol, 1e-2);
  EXPECT_EQ(options.resolve("y", DType::float32).atol, 1e-5);
  options.rtol = 5e-3;
  EXPECT_EQ(options.resolve("y", DType::float32).rtol, 5e-3);
  EXPECT_EQ(options.resolve("y", DType::float32).atol, 1e-5);
  options.per_output["logits"] = Tolerance{0.1, 0.2};
  EXPECT_EQ(options.resolve("logits", DType::float32).atol, 0.2);
}

TEST(FormatIndex, TurnsAFlatIndexIntoCoordinates) {
  EXPECT_EQ(format_index(7, {2, 3, 4}), "[0, 1, 3]");
  EXPECT_EQ(format_index(23, {2, 3, 4}), "[1, 2, 3]");
}

}  // namespace
