// The budget solver against brute force on small random cases, the infeasible budget,
// and the coarse-unit path (large capacities) staying within the capacity.
#include <random>

#include "test_util.h"
#include "tk/quant/budget.h"

namespace tk::quant {
namespace {

std::vector<BudgetItem> random_items(std::mt19937& rng, size_t n, size_t candidates, uint64_t max_bytes) {
  std::vector<BudgetItem> items(n);
  for (auto& item : items) {
    for (size_t c = 0; c < candidates; ++c) {
      item.bytes.push_back(1 + rng() % max_bytes);
      item.error.push_back(std::uniform_real_distribution<double>(0, 100)(rng));
    }
  }
  return items;
}

// Least error over every assignment within capacity (+inf when none fits).
double brute_force(const std::vector<BudgetItem>& items, uint64_t capacity) {
  double best = HUGE_VAL;
  std::vector<size_t> pick(items.size(), 0);
  while (true) {
    uint64_t bytes = 0;
    double error = 0;
    for (size_t i = 0; i < items.size(); ++i) bytes += items[i].bytes[pick[i]], error += items[i].error[pick[i]];
    if (bytes <= capacity) best = std::min(best, error);
    size_t i = 0;
    while (i < items.size() && ++pick[i] == items[i].bytes.size()) pick[i++] = 0;
    if (i == items.size()) return best;
  }
}

TEST(Budget, OptimalAgainstBruteForce) {
  std::mt19937 rng(42);
  for (int round = 0; round < 300; ++round) {
    size_t n = 1 + rng() % 5, c = 1 + rng() % 4;
    std::vector<BudgetItem> items = random_items(rng, n, c, 50);
    uint64_t lo = budget_min_bytes(items);
    uint64_t capacity = lo + rng() % (50 * n);
    BudgetResult r = budget_solve(items, capacity);
    double expected = brute_force(items, capacity);
    ASSERT_NEAR(r.error, expected, 1e-9) << "round " << round;
    ASSERT_LE(r.bytes, capacity);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) bytes += items[i].bytes[r.choice[i]];
    ASSERT_EQ(bytes, r.bytes);
  }
}

TEST(Budget, CoarseUnitsStayWithinCapacityAndNearTheOptimum) {
  // Byte counts in the millions force units of many bytes; the final fill spends the rest.
  std::mt19937 rng(7);
  for (int round = 0; round < 30; ++round) {
    std::vector<BudgetItem> items = random_items(rng, 5, 4, 5'000'000);
    uint64_t capacity = budget_min_bytes(items) + rng() % 10'000'000;
    BudgetResult r = budget_solve(items, capacity, 1024);
    ASSERT_LE(r.bytes, capacity);
    double expected = brute_force(items, capacity);
    EXPECT_LE(r.error, expected * 1.05 + 1e-9) << round;
  }
}

TEST(Budget, BelowTheSmallestReachableIsAUsageError) {
  std::vector<BudgetItem> items = {{{10, 20}, {5, 1}}, {{7, 3}, {2, 9}}};
  EXPECT_EQ(budget_min_bytes(items), 13u);
  test::expect_error_exact([&] { budget_solve(items, 12); }, ErrorKind::kUsage,
                           "budget below the smallest reachable size of 13 bytes");
  BudgetResult r = budget_solve(items, 13);
  EXPECT_EQ(r.choice, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.bytes, 13u);
}

TEST(Budget, DeterministicTieBreak) {
  std::vector<BudgetItem> items = {{{4, 4}, {1, 1}}, {{4, 4}, {1, 1}}};
  BudgetResult r = budget_solve(items, 100);
  EXPECT_EQ(r.choice, (std::vector<int>{0, 0}));
}

}  // namespace
}  // namespace tk::quant
