// Budgeted mixed precision: choose one candidate (scheme) per tensor so that the total
// stored bytes stay within a capacity and the total weighted error is least — a
// multiple-choice knapsack.
//
// Solved exactly by dynamic programming over bytes counted in units of
// ceil(capacity / max_units): every cost is rounded up to whole units, so any solution
// of the DP fits the true capacity; with a unit of one byte (capacity <= max_units) the
// answer is the exact optimum. A final fill then spends what the rounding left: it
// repeatedly takes the single-tensor change that lowers the error most while the exact
// bytes still fit. Deterministic: ties go to the lower candidate index.
#pragma once

#include <cstdint>
#include <vector>

namespace tk::quant {

struct BudgetItem {
  std::vector<uint64_t> bytes;  // per candidate
  std::vector<double> error;    // per candidate, same length, finite
};

struct BudgetResult {
  std::vector<int> choice;  // candidate index per item
  uint64_t bytes = 0;
  double error = 0;
};

// Smallest total bytes any choice reaches (each item's cheapest candidate).
uint64_t budget_min_bytes(const std::vector<BudgetItem>& items);

// The least-error choice within `capacity` bytes. Throws kUsage when an item has no
// candidate, or when capacity < budget_min_bytes(items) (the message states the
// smallest reachable bytes; the caller turns it into bits per weight).
BudgetResult budget_solve(const std::vector<BudgetItem>& items, uint64_t capacity,
                          uint64_t max_units = uint64_t{1} << 18);

}  // namespace tk::quant
