// The budgeted pipeline called from C++ with no command line (quant::allocate): a host
// holding tensors in memory, a budget in bits per weight or in bytes, and the choices
// checked against an exhaustive search over the table the pipeline measured.
#include <cmath>
#include <random>
#include <set>

#include "test_util.h"
#include "tk/quant/allocate.h"

namespace tk::quant {
namespace {

class MemoryHost : public AllocationHost {
 public:
  std::vector<AllocationTensor> tensors;
  std::vector<std::vector<float>> values;
  std::set<std::string> refused;  // names whose first read passes them through
  std::set<std::string> no_fit;   // names no candidate fits
  std::vector<size_t> unfit_calls;
  size_t reads = 0;

  void add(const std::string& name, Shape shape, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0, scale);
    std::vector<float> x(shape_numel(shape));
    for (float& v : x) v = n(rng);
    tensors.push_back({name, shape, DType::kF32, x.size() * 4, true, ""});
    values.push_back(std::move(x));
  }
  bool read(size_t i, std::vector<float>& x, bool first) override {
    ++reads;
    x = values[i];
    return !(first && refused.count(tensors[i].name));
  }
  const Scheme& scheme(const std::string& spec) override {
    auto& s = schemes_[spec];
    if (!s) s = make_scheme(spec);
    return *s;
  }
  bool fits(size_t i, const std::string& spec) override {
    return !no_fit.count(tensors[i].name) && fills_blocks(scheme(spec), tensors[i].shape, options(i, spec));
  }
  QuantOptions options(size_t, const std::string&) override { return {}; }
  void unfit(size_t i) override { unfit_calls.push_back(i); }

 private:
  std::map<std::string, std::unique_ptr<Scheme>> schemes_;
};

MemoryHost three_tensors() {
  MemoryHost h;
  h.add("a.weight", {64, 256}, 1.0F, 1);
  h.add("b.weight", {64, 256}, 0.1F, 2);
  h.add("c.weight", {128, 256}, 0.5F, 3);
  return h;
}

// The least total error over every choice within `capacity`, from the table.
double best_error(const CandidateTable& t, uint64_t capacity) {
  double best = INFINITY;
  std::vector<size_t> pick(t.items.size(), 0);
  while (true) {
    uint64_t bytes = 0;
    double error = 0;
    for (size_t i = 0; i < pick.size(); ++i) bytes += t.items[i].bytes[pick[i]], error += t.items[i].error[pick[i]];
    if (bytes <= capacity) best = std::min(best, error);
    size_t i = 0;
    while (i < pick.size() && ++pick[i] == t.items[i].bytes.size()) pick[i++] = 0;
    if (i == pick.size()) return best;
  }
}

TEST(Allocate, ChoosesTheLeastErrorWithinTheBudget) {
  for (double bpw : {4.5, 5.5, 7.0, 8.5}) {
    MemoryHost h = three_tensors();
    AllocationRequest r;
    r.candidates = {"int4", "int8"};
    r.sampled = false;
    r.bpw = bpw;
    const AllocationResult out = allocate(h, h.tensors, r);
    ASSERT_TRUE(out.feasible) << bpw;
    const CandidateTable& t = out.table;
    ASSERT_EQ(t.items.size(), 3U);
    EXPECT_EQ(t.weights, 4U * 64 * 256);
    const uint64_t capacity = static_cast<uint64_t>(std::floor(bpw * static_cast<double>(t.weights) / 8));
    uint64_t bytes = 0;
    double error = 0;
    for (size_t i = 0; i < t.items.size(); ++i) {
      const std::string& c = out.choice[t.tensor[i]];
      const size_t j = std::find(t.usable[i].begin(), t.usable[i].end(), c) - t.usable[i].begin();
      ASSERT_LT(j, t.usable[i].size()) << c;
      bytes += t.items[i].bytes[j], error += t.items[i].error[j];
    }
    EXPECT_LE(bytes, capacity) << bpw;
    EXPECT_DOUBLE_EQ(error, best_error(t, capacity)) << bpw;
    EXPECT_EQ(out.estimated, 0U);  // measured whole
  }
}

TEST(Allocate, MoreBitsGoWhereTheErrorIs) {
  // Room for one tensor of the two equal ones at int8: the one of larger values.
  MemoryHost h;
  h.add("small.weight", {64, 256}, 0.01F, 4);
  h.add("large.weight", {64, 256}, 1.0F, 5);
  AllocationRequest r;
  r.candidates = {"int4", "int8"};
  r.bpw = 6.5;
  const AllocationResult out = allocate(h, h.tensors, r);
  ASSERT_TRUE(out.feasible);
  EXPECT_EQ(out.choice[0], "int4");
  EXPECT_EQ(out.choice[1], "int8");
}

TEST(Allocate, SizeBelowTheSmallestIsReported) {
  MemoryHost h = three_tensors();
  AllocationRequest r;
  r.candidates = {"int4", "int8"};
  r.size = 1000;
  const AllocationResult out = allocate(h, h.tensors, r);
  EXPECT_FALSE(out.feasible);
  EXPECT_EQ(out.min_bytes, budget_min_bytes(out.table.items));  // no overhead, nothing passed through
  for (const std::string& c : out.choice) EXPECT_TRUE(c.empty());
}

TEST(Allocate, PassedThroughAndUnfitTensorsCountAgainstASize) {
  MemoryHost h = three_tensors();
  h.refused = {"a.weight"};
  h.no_fit = {"b.weight"};
  AllocationRequest r;
  r.candidates = {"int4", "int8"};
  r.size = 64 * 256 * 8;  // a and b whole in f32, c at 4 bits
  AllocationResult out = allocate(h, h.tensors, r);
  ASSERT_EQ(h.unfit_calls, std::vector<size_t>{1});
  EXPECT_EQ(out.table.pass_bytes, 2U * 64 * 256 * 4);
  ASSERT_EQ(out.table.items.size(), 1U);
  EXPECT_EQ(out.table.tensor[0], 2U);
  EXPECT_FALSE(out.feasible);  // c at int4 needs 4.5 bits per weight
  r.size = 2 * 64 * 256 * 4 + 128 * 256 * 9 / 16 * 2;
  out = allocate(h, h.tensors, r);
  ASSERT_TRUE(out.feasible);
  EXPECT_TRUE(out.choice[0].empty());
  EXPECT_TRUE(out.choice[1].empty());
  EXPECT_EQ(out.choice[2], "int8");
}

TEST(Allocate, FixedTensorsTakeTheirShareOfABpwBudget) {
  MemoryHost h = three_tensors();
  h.tensors[2].scheme = "int8";  // 128 x 256 at 8.5 bits
  AllocationRequest r;
  r.candidates = {"int4", "int8"};
  r.bpw = (128 * 256 * 8.5 + 2 * 64 * 256 * 4.5) / (4 * 64 * 256);
  AllocationResult out = allocate(h, h.tensors, r);
  ASSERT_TRUE(out.feasible);
  EXPECT_EQ(out.table.fixed_bytes, 128U * 256 * 17 / 16);
  EXPECT_EQ(out.choice[0], "int4");
  EXPECT_EQ(out.choice[1], "int4");
  EXPECT_TRUE(out.choice[2].empty());
}

}  // namespace
}  // namespace tk::quant
