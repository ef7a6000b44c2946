// Detections matched as sets (parity/detections.h): order does not matter, moved boxes and
// changed scores do, and a detection on one side only passes only at the score threshold.
#include <gtest/gtest.h>

#include <cstring>

#include "onnxproof/parity/detections.h"

using namespace onnxproof;

namespace {

template <typename T>
Tensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<T> values) {
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return *Tensor::from_bytes(dtype, std::move(shape), std::move(bytes));
}

// A side of n detections: boxes (flattened, 4 per row), scores, labels.
struct Side {
  Tensor boxes, scores, labels;
  Side(const std::vector<float>& b, const std::vector<float>& s, const std::vector<int64_t>& l)
      : boxes(tensor<float>(DType::float32, {static_cast<int64_t>(s.size()), 4}, b)),
        scores(tensor<float>(DType::float32, {static_cast<int64_t>(s.size())}, s)),
        labels(tensor<int64_t>(DType::int64, {static_cast<int64_t>(l.size())}, l)) {}
  DetectionSide view() const { return {&boxes, &scores, &labels, {}}; }
};

const DetectionBudget k_budget{0.01, 0.001, 0.0, ToleranceRule::fixed};

TEST(Detections, ReorderedDetectionsMatch) {
  const Side pytorch({0, 0, 10, 10, 20, 20, 40, 40}, {0.9F, 0.5F}, {1, 2});
  const Side onnx({20, 20, 40, 40, 0, 0, 10.005F, 10}, {0.5F, 0.9F}, {2, 1});
  const auto match = match_detections(pytorch.view(), onnx.view(), k_budget, 0.3);
  EXPECT_EQ(match.matched, 2);
  EXPECT_EQ(match.only_expected + match.only_actual, 0);
  EXPECT_NEAR(match.worst_box, 0.005, 1e-5);
  EXPECT_TRUE(match.passed(k_budget));
}

TEST(Detections, AMovedBoxFails) {
  const Side pytorch({0, 0, 10, 10}, {0.9F}, {1});
  const Side onnx({0, 0, 11, 10}, {0.9F}, {1});
  const auto match = match_detections(pytorch.view(), onnx.view(), k_budget, 0.3);
  EXPECT_EQ(match.matched, 1);  // IoU 0.91: the same detection, moved
  EXPECT_NEAR(match.worst_box, 1.0, 1e-6);
  EXPECT_FALSE(match.passed(k_budget));
}

TEST(Detections, AnotherLabelIsNoMatch) {
  const Side pytorch({0, 0, 10, 10}, {0.9F}, {1});
  const Side onnx({0, 0, 10, 10}, {0.9F}, {2});
  const auto match = match_detections(pytorch.view(), onnx.view(), k_budget, 0.3);
  EXPECT_EQ(match.matched, 0);
  EXPECT_EQ(match.only_expected, 1);
  EXPECT_EQ(match.only_actual, 1);
  EXPECT_EQ(match.at_threshold, 0);
  EXPECT_FALSE(match.passed(k_budget));
}

TEST(Detections, OneSideOnlyAtTheThresholdIsAcceptable) {
  const Side pytorch({0, 0, 10, 10, 30, 30, 40, 40}, {0.9F, 0.3004F}, {1, 1});
  const Side onnx({0, 0, 10, 10}, {0.9F}, {1});
  const auto match = match_detections(pytorch.view(), onnx.view(), k_budget, 0.3);
  EXPECT_EQ(match.only_expected, 1);
  EXPECT_EQ(match.at_threshold, 1);
  EXPECT_TRUE(match.passed(k_budget));
}

TEST(Detections, OneSideOnlyAboveTheThresholdFails) {
  const Side pytorch({0, 0, 10, 10, 30, 30, 40, 40}, {0.9F, 0.6F}, {1, 1});
  const Side onnx({0, 0, 10, 10}, {0.9F}, {1});
  const auto match = match_detections(pytorch.view(), onnx.view(), k_budget, 0.3);
  EXPECT_EQ(match.only_expected, 1);
  EXPECT_EQ(match.at_threshold, 0);
  EXPECT_NEAR(match.worst_unmatched_score, 0.6, 1e-6);
  EXPECT_FALSE(match.passed(k_budget));
}

TEST(Detections, ATopKCutIsAThresholdToo) {
  // Both sides kept two (a detector cutting at k = 2): their last detections differ, at one score.
  const Side pytorch({0, 0, 10, 10, 30, 30, 40, 40}, {0.9F, 0.2100F}, {1, 1});
  const Side onnx({0, 0, 10, 10, 60, 60, 70, 70}, {0.9F, 0.2104F}, {1, 1});
  const auto match = match_detections(pytorch.view(), onnx.view(), k_budget, 0.05);
  EXPECT_EQ(match.only_expected + match.only_actual, 2);
  EXPECT_EQ(match.at_threshold, 2);
  EXPECT_TRUE(match.passed(k_budget));
}

TEST(Detections, CalibratedBudgetGrowsWithTheModelsNoise) {
  const Side pytorch({0, 0, 10, 10}, {0.9F}, {1});
  const auto exact_boxes = tensor<double>(DType::float64, {1, 4}, {0, 0, 10.001, 10});
  const auto exact_scores = tensor<double>(DType::float64, {1}, {0.9});
  const DetectionSide exact{&exact_boxes, &exact_scores, &pytorch.labels, {}};
  const auto budget = detection_budget(pytorch.view(), exact, Tolerance{}, 0.3);
  EXPECT_EQ(budget.rule, ToleranceRule::calibrated);
  EXPECT_GE(budget.box, 8 * 0.001 * 0.99);
  EXPECT_LT(budget.box, 0.0081 + 1e-4);
  const auto fixed = detection_budget(pytorch.view(), std::nullopt, Tolerance{}, 0.3);
  EXPECT_EQ(fixed.rule, ToleranceRule::fixed);
  EXPECT_NEAR(fixed.box, 1e-5 + 1e-3 * 10, 1e-9);
}

TEST(Detections, MisshapenBoxesAreRefused) {
  const auto boxes = tensor<float>(DType::float32, {2, 3}, {0, 0, 1, 1, 2, 2});
  const auto scores = tensor<float>(DType::float32, {2}, {0.5F, 0.5F});
  EXPECT_FALSE(detection_side(DetectionSet{.boxes = "boxes", .scores = "scores", .labels = "", .extra = {}, .score_threshold = 0.0}, &boxes, &scores, nullptr, {}));
}

}  // namespace
