#include "tk/bench/regression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"
#include "tk/bench/memory_bandwidth.h"
#include "tk/bench/peak_memory.h"
#include "tk/core/error.h"

namespace tk::bench {
namespace {

TEST(JudgeChange, HigherIsBetterThroughput) {
  EXPECT_EQ(judge_change(100, 90, Better::kHigher, 0.05).verdict, Verdict::kRegressed);
  EXPECT_EQ(judge_change(100, 110, Better::kHigher, 0.05).verdict, Verdict::kImproved);
  EXPECT_EQ(judge_change(100, 97, Better::kHigher, 0.05).verdict, Verdict::kSame);
  EXPECT_DOUBLE_EQ(judge_change(100, 90, Better::kHigher, 0.05).relative, -0.1);
}

TEST(JudgeChange, LowerIsBetterError) {
  EXPECT_EQ(judge_change(0.01, 0.02, Better::kLower, 0.05).verdict, Verdict::kRegressed);
  EXPECT_EQ(judge_change(0.02, 0.01, Better::kLower, 0.05).verdict, Verdict::kImproved);
}

TEST(JudgeChange, ExactlyAtThresholdIsSame) {
  EXPECT_EQ(judge_change(100, 95, Better::kHigher, 0.05).verdict, Verdict::kSame);
}

TEST(JudgeChange, NegativeOldValueUsesItsMagnitude) {
  // An SQNR of -2 dB going to -4 dB is worse for a higher-is-better metric.
  Change c = judge_change(-2, -4, Better::kHigher, 0.05);
  EXPECT_DOUBLE_EQ(c.relative, -1.0);
  EXPECT_EQ(c.verdict, Verdict::kRegressed);
}

TEST(JudgeChange, FromZeroIsInfinite) {
  Change c = judge_change(0, 1e-6, Better::kLower, 0.05);
  EXPECT_TRUE(std::isinf(c.relative));
  EXPECT_EQ(c.verdict, Verdict::kRegressed);
  EXPECT_EQ(judge_change(0, 0, Better::kLower, 0.05).verdict, Verdict::kSame);
}

TEST(JudgeChange, NoneIsNeverJudged) {
  Change c = judge_change(10, 1000, Better::kNone, 0.05);
  EXPECT_EQ(c.verdict, Verdict::kSame);
  EXPECT_DOUBLE_EQ(c.relative, 99.0);
}

TEST(Better, NamesRoundTripAndRejectOthers) {
  for (Better b : {Better::kHigher, Better::kLower, Better::kNone}) EXPECT_EQ(better_parse(better_name(b)), b);
  EXPECT_EQ(test::kind_of([] { better_parse("up"); }), ErrorKind::kInvalidInput);
}

TEST(MemoryBandwidth, IsPositiveAndPlausible) {
  double gb_s = measure_memory_bandwidth(uint64_t(8) << 20, 2, 1);
  EXPECT_GT(gb_s, 0.1);
  EXPECT_LT(gb_s, 10000.0);
  EXPECT_EQ(measure_memory_bandwidth(0), 0.0);
}

TEST(PeakMemory, SeesAnAllocationThatIsTouched) {
  reset_peak_rss();
  uint64_t before = peak_rss_bytes();
  ASSERT_GT(before, 0u);
  {
    std::vector<char> block(uint64_t(48) << 20, 1);
    volatile char sink = block[block.size() / 2];
    (void)sink;
  }
  EXPECT_GE(peak_rss_bytes(), before + (uint64_t(40) << 20));
}

TEST(JudgeChange, AChangeInsideEitherRunsSpreadIsNoise) {
  // 20% slower, past a 5% threshold: a regression when the runs were tight...
  EXPECT_EQ(judge_change(100, 80, Better::kHigher, 0.05, Spread{98, 102}, Spread{79, 81}).verdict,
            Verdict::kRegressed);
  // ...but not when the new median lies within the old run's spread, or the old median
  // within the new run's: either run alone was that noisy.
  EXPECT_EQ(judge_change(100, 80, Better::kHigher, 0.05, Spread{70, 130}, Spread{79, 81}).verdict, Verdict::kSame);
  EXPECT_EQ(judge_change(100, 80, Better::kHigher, 0.05, Spread{98, 102}, Spread{60, 100}).verdict, Verdict::kSame);
  EXPECT_EQ(judge_change(100, 130, Better::kHigher, 0.05, Spread{90, 140}, std::nullopt).verdict, Verdict::kSame);
  // Without spreads (deterministic metrics) the threshold alone decides.
  EXPECT_EQ(judge_change(100, 80, Better::kHigher, 0.05).verdict, Verdict::kRegressed);
  EXPECT_EQ(judge_change(100, 130, Better::kHigher, 0.05, std::nullopt, Spread{125, 135}).verdict,
            Verdict::kImproved);
}

}  // namespace
}  // namespace tk::bench
