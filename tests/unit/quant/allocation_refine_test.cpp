// The budget's refinement steps: a refinement whose larger share would sample the same
// rows keeps its estimate (the estimate made again would be the same), and a whole
// measurement hands over its parts for the final pass.
#include <cstring>

#include "test_util.h"
#include "tk/quant/allocation.h"
#include "tk/quant/view.h"

namespace tk::quant {
namespace {

TEST(Allocation, SampleRowsTakenCountsTheRowsOrZeroForWhole) {
  EXPECT_EQ(sample_rows_taken(192, 128), kSampleMinRows);
  EXPECT_EQ(sample_rows_taken(192, 32), kSampleMinRows);
  EXPECT_EQ(sample_rows_taken(192, 8), kSampleMinRows);
  EXPECT_EQ(sample_rows_taken(192, 2), 0);  // 96 rows of 192: measured whole
  EXPECT_EQ(sample_rows_taken(1536, 32), 48);
  EXPECT_EQ(sample_rows_taken(100, 128), 0);
}

TEST(Allocation, RefineOnTheSameRowsKeepsTheEstimateThenMeasuresWhole) {
  const Shape shape{192, 64};
  const std::vector<float> x = test::normal_floats(192 * 64, 7, 0.0f, 0.02f);
  const auto scheme = make_scheme("int4");
  const QuantOptions o;
  const int64_t view = choose_view_cols(*scheme, shape, o);
  RowSample first = sample_rows(x, view, 64, nullptr, kSampleShare);
  const Estimate start = estimate_error(*scheme, x, shape, o, &first);
  ASSERT_FALSE(start.exact);
  Candidates t;
  t.items.push_back({{start.bytes}, {start.error}});
  t.usable.push_back({"int4"});
  t.estimates.push_back({start});
  t.samples.emplace_back();
  t.samples[0].emplace(std::make_pair(view, kSampleShare), std::move(first));
  for (const int64_t share : {kSampleShare / 4, kSampleShare / 16}) {
    const Estimate kept = allocation_refine(t, 0, 0, *scheme, x, shape, o);
    RowSample same = sample_rows(x, view, 64, nullptr, share);
    const Estimate fresh = estimate_error(*scheme, x, shape, o, &same);
    EXPECT_EQ(kept.share, share);
    EXPECT_EQ(kept.error, fresh.error);
    EXPECT_EQ(kept.se, fresh.se);
    EXPECT_EQ(kept.rows, fresh.rows);
    EXPECT_EQ(t.items[0].error[0], fresh.error);
    EXPECT_TRUE(t.samples[0].count({view, share}));
  }
  Measured whole;
  const Estimate exact = allocation_refine(t, 0, 0, *scheme, x, shape, o, &whole);
  ASSERT_TRUE(exact.exact);
  const Measured again = quantize_measure(*scheme, x, shape, o, true);
  EXPECT_EQ(exact.error, again.stats.weighted_sse);
  EXPECT_EQ(whole.stats.weighted_sse, again.stats.weighted_sse);
  ASSERT_EQ(whole.q.parts.size(), again.q.parts.size());
  for (const auto& [suffix, part] : again.q.parts) {
    const Tensor& kept = whole.q.parts.at(suffix);
    ASSERT_EQ(kept.nbytes(), part.nbytes()) << suffix;
    EXPECT_EQ(0, std::memcmp(kept.data(), part.data(), part.nbytes())) << suffix;
  }
}

}  // namespace
}  // namespace tk::quant
