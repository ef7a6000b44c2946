// Quantization steps on tensors built in code (quantize/steps.h), and the rounding audit through the
// loaded ONNX Runtime's CPU provider (quantize/rounding_audit.h).
#include <gtest/gtest.h>

#include <cstring>

#include "onnxproof/quantize/rounding_audit.h"
#include "onnxproof/quantize/steps.h"

using namespace onnxproof;

namespace {

Tensor floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return *Tensor::from_bytes(DType::float32, std::move(shape), std::move(bytes));
}

// (q - zero point) x scale per channel of axis 1, in float32 as a DequantizeLinear computes it.
std::vector<float> on_grid(const std::vector<int>& q, const std::vector<float>& scales, int zero_point = 0) {
  std::vector<float> values;
  for (std::size_t i = 0; i < q.size(); ++i)
    values.push_back(static_cast<float>(q[i] - zero_point) * scales[i % scales.size()]);
  return values;
}

const QuantGrid k_channels{{0.02, 0.5}, 1, "dq"};

}  // namespace

TEST(Steps, CountsWholeStepsPerChannel) {
  const Tensor reference = floats({4, 2}, on_grid({3, 3, -7, 0, 12, 5, 1, -1}, {0.02F, 0.5F}));
  const Tensor actual = floats({4, 2}, on_grid({4, 3, -7, 2, 12, 5, 1, -1}, {0.02F, 0.5F}));
  const StepCount count = count_steps(reference, actual, k_channels);
  EXPECT_EQ(count.elements, 8);
  EXPECT_EQ(count.zero, 6);
  EXPECT_EQ(count.one, 1);   // element 0: one step of 0.02
  EXPECT_EQ(count.over, 1);  // element 3: two steps of 0.5
  EXPECT_NEAR(count.max_steps, 2.0, 1e-5);
  EXPECT_EQ(count.worst_at, 3);
  EXPECT_LT(count.off_grid, k_off_grid_steps);
}

TEST(Steps, AnotherScaleLeavesTheGrid) {
  const Tensor reference = floats({1, 2}, on_grid({100, 100}, {0.02F, 0.5F}));
  const Tensor rounded = floats({1, 2}, on_grid({100, 100}, {0.0200043F, 0.5F}));  // 0.02 stored as float16
  const StepCount count = count_steps(reference, rounded, k_channels);
  EXPECT_GT(count.off_grid, k_off_grid_steps);
  EXPECT_EQ(count.off_grid_at, 0);
  EXPECT_FALSE(within_steps(count, step_allowance(nullptr)));
}

TEST(Steps, TheAllowanceFollowsTheTwinAndHasAFloor) {
  StepAllowance floor = step_allowance(nullptr);
  EXPECT_EQ(floor.max_steps, 1.0);
  EXPECT_EQ(floor.share, k_tie_share);
  StepCount twin;
  twin.elements = 2000;
  twin.one = 472;  // PT2E ResNet-18's logits: its float32 run against its float64 twin
  twin.zero = 1528;
  twin.max_steps = 1.0;
  const StepAllowance wide = step_allowance(&twin);
  EXPECT_EQ(wide.max_steps, 2.0);
  EXPECT_NEAR(wide.share, 2 * 472.0 / 2000.0, 1e-12);
}

TEST(Steps, TheCapNeverFallsBelowTheTwinsOwnShare) {
  StepCount twin;  // a statically quantized EfficientNet-B0's logits against their float64 twin
  twin.elements = 2000;
  twin.zero = 374;
  twin.one = 652;
  twin.over = 974;
  twin.max_steps = 16.0;
  const StepAllowance allowed = step_allowance(&twin);
  EXPECT_NEAR(allowed.share, 1626.0 / 2000.0, 1e-12);  // above k_max_share: the twin's own
  StepCount onnx;                                      // ONNX Runtime's: 80% moved, 10 steps at most
  onnx.elements = 2000;
  onnx.zero = 399;
  onnx.one = 757;
  onnx.over = 844;
  onnx.max_steps = 10.0;
  EXPECT_TRUE(within_steps(onnx, allowed));
  StepCount moderate = twin;  // a twin moving 30%: twice its share
  moderate.zero = 1400;
  moderate.one = 600;
  moderate.over = 0;
  EXPECT_NEAR(step_allowance(&moderate).share, 0.6, 1e-12);
  moderate.zero = 800;
  moderate.one = 1200;  // 60%: twice is 120%, capped at 75%
  EXPECT_NEAR(step_allowance(&moderate).share, k_max_share, 1e-12);
}

TEST(Steps, TheBinomialMarginLetsASmallOutputMoveAFewElements) {
  EXPECT_EQ(allowed_moved(20, 0.05), 4);
  EXPECT_EQ(allowed_moved(1024, 0.05), 73);
  EXPECT_EQ(allowed_moved(1, 0.05), 1);
  StepCount two_of_twenty;
  two_of_twenty.elements = 20;
  two_of_twenty.zero = 18;
  two_of_twenty.one = 2;
  two_of_twenty.max_steps = 1.0;
  EXPECT_TRUE(within_steps(two_of_twenty, step_allowance(nullptr)));
  StepCount shifted = two_of_twenty;  // a zero point off by one moves every element
  shifted.zero = 0;
  shifted.one = 20;
  EXPECT_FALSE(within_steps(shifted, step_allowance(nullptr)));
}

TEST(RoundingAudit, TheCpuProviderRoundsFloat32TiesHalfToEven) {
  const RoundingAudit audit = audit_rounding("cpu", QuantizePair{DType::float32, DType::int8}, 13);
  ASSERT_TRUE(audit.error.empty()) << audit.error;
  EXPECT_EQ(audit.values, 259);  // -129.5 .. 128.5: every tie of int8 and those past each end
  EXPECT_EQ(audit.mismatches, 0);
  EXPECT_EQ(audit.mode, "half to even");
}

TEST(RoundingAudit, AnUnknownProviderIsAnErrorNotAPass) {
  const RoundingAudit audit = audit_rounding("no-such-provider", QuantizePair{DType::float32, DType::uint8}, 13);
  EXPECT_FALSE(audit.error.empty());
  EXPECT_FALSE(audit.passed());
}
