#include "tk/quant/allocate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/quant/budget.h"
#include "tk/quant/layout.h"
#include "tk/quant/sensitivity.h"
#include "tk/quant/view.h"

namespace tk::quant {

double weighted_signal(const std::vector<float>& x, int64_t cols, const float* importance) {
  double s = 0;
  if (!importance) {
    for (float v : x) s += 1.0 * v * v;
    return s;
  }
  // Row by row, in the same order as one pass (no division per value).
  const size_t width = static_cast<size_t>(cols);
  for (size_t r = 0; r < x.size(); r += width) {
    for (size_t c = 0; c < width && r + c < x.size(); ++c) {
      s += static_cast<double>(importance[c]) * x[r + c] * x[r + c];
    }
  }
  return s;
}

bool deferred_candidate(const std::string& spec) { return spec.starts_with("iq2") || spec.starts_with("iq3"); }

namespace {

int64_t last_dim(const Shape& shape) { return shape.empty() ? 1 : shape.back(); }

// A tensor's candidates that fit it, each with its estimated error.
struct TensorCandidates {
  BudgetItem item;
  std::vector<std::string> usable;
  std::vector<Estimate> estimates;
  std::map<std::pair<int64_t, int64_t>, RowSample> samples;  // most candidates share one
};

// Estimate tensor i's (values x) error under each of `candidates` that fits it, on a
// sample of rows (`sample`, shared by the candidates of one view) or whole.
void estimate_candidates(AllocationHost& host, size_t i, const AllocationTensor& t, const std::vector<float>& x,
                         const std::vector<std::string>& candidates, bool sample, TensorCandidates& out) {
  const int64_t cols = last_dim(t.shape);
  for (const std::string& c : candidates) {
    try {
      if (!host.fits(i, c)) continue;
      const Scheme& scheme = host.scheme(c);
      QuantOptions oc = host.options(i, c);
      const RowSample* rows = nullptr;
      if (sample) {
        const int64_t view = choose_view_cols(scheme, t.shape, oc);
        const std::pair<int64_t, int64_t> key{view, kSampleShare};
        auto it = out.samples.find(key);
        if (it == out.samples.end()) it = out.samples.emplace(key, sample_rows(x, view, cols, oc.importance)).first;
        rows = &it->second;
      }
      Estimate est;
      host.run(oc, [&](const QuantOptions& on) { est = estimate_error(scheme, x, t.shape, on, rows); });
      out.item.bytes.push_back(est.bytes);
      out.item.error.push_back(est.error);
      out.estimates.push_back(est);
      out.usable.push_back(c);
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::kUsage) throw;
    }
  }
}

}  // namespace

CandidateTable measure_candidates(AllocationHost& host, const std::vector<AllocationTensor>& tensors,
                                  const std::vector<std::string>& candidates, bool sample,
                                  const std::vector<std::string>& deferred) {
  for (const auto& c : candidates) host.scheme(c);
  for (const auto& c : deferred) host.scheme(c);
  CandidateTable table;
  uint64_t done = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const AllocationTensor& t = tensors[i];
    host.progress({AllocationProgress::Phase::kMeasure, i, done, 0});
    std::vector<float> x;
    if (!t.quantize || !host.read(i, x, true)) {
      table.pass_bytes += t.nbytes;
      continue;
    }
    done += x.size();
    QuantOptions o = host.options(i, "");
    const double signal = weighted_signal(x, last_dim(t.shape), o.importance);
    if (!t.scheme.empty()) {
      Measured m;
      host.run(o, [&](const QuantOptions& on) { m = quantize_measure(host.scheme(t.scheme), x, t.shape, on, false); });
      table.weights += x.size();
      table.fixed_bytes += m.bytes;
      table.fixed_error += m.stats.weighted_sse;
      table.fixed_signal += signal;
      continue;
    }
    TensorCandidates tc;
    estimate_candidates(host, i, t, x, candidates, sample, tc);
    // Deferred candidates wait for the first solve, unless nothing else fits.
    const bool none_fit = tc.usable.empty();
    if (none_fit) estimate_candidates(host, i, t, x, deferred, sample, tc);
    const bool defer =
        !none_fit && std::any_of(deferred.begin(), deferred.end(), [&](const std::string& c) { return host.fits(i, c); });
    if (tc.usable.empty()) {
      host.unfit(i);
      table.pass_bytes += t.nbytes;
      continue;
    }
    table.weights += x.size();
    table.items.push_back(std::move(tc.item));
    table.tensor.push_back(i);
    table.usable.push_back(std::move(tc.usable));
    table.estimates.push_back(std::move(tc.estimates));
    for (auto& [view, rows] : tc.samples) release_values(rows);  // only the energies are needed now
    table.samples.push_back(std::move(tc.samples));
    table.signal.push_back(signal);
    table.deferred_left.push_back(defer);
  }
  return table;
}

namespace {

// "-vv": item i's candidates as estimated, each with its bits per weight and SQNR.
std::string candidates_line(const CandidateTable& t, const AllocationTensor& tensor, size_t i) {
  const double weights = static_cast<double>(shape_numel(tensor.shape));
  std::string line = tensor.name + ": estimated";
  for (size_t j = 0; j < t.usable[i].size(); ++j) {
    line += fmt::format(" {} {:.2f}bpw {:.2f}dB", t.usable[i][j], 8.0 * static_cast<double>(t.items[i].bytes[j]) / weights,
                        10 * std::log10(t.signal[i] / t.items[i].error[j]));
  }
  return line;
}

// Item i's candidates that cannot win go: first those near a grid the values sit close
// to (returned), then those beaten beyond the estimates' margin (counted).
std::vector<std::string> drop_losers(CandidateTable& t, const AllocationTensor& tensor, size_t i, size_t* dominated) {
  std::vector<std::string> snaps = allocation_drop_snaps(t, i, t.signal[i], shape_numel(tensor.shape), tensor.dtype);
  *dominated += allocation_drop_dominated(t, i);
  return snaps;
}

// The objective's weight of each item (see allocate).
std::vector<double> item_weights(AllocationHost& host, const std::vector<AllocationTensor>& tensors,
                                 const CandidateTable& t, const std::vector<std::string_view>& model) {
  std::vector<std::string_view> budgeted;
  std::vector<bool> weighted;
  for (size_t i : t.tensor) {
    budgeted.push_back(tensors[i].name);
    weighted.push_back(host.options(i, "").importance != nullptr);
  }
  return objective_weights(model, budgeted, t.signal, weighted);
}

BudgetResult solve_weighted(const CandidateTable& t, const std::vector<double>& weight, uint64_t capacity) {
  std::vector<BudgetItem> items = t.items;
  for (size_t i = 0; i < items.size(); ++i)
    for (double& e : items[i].error) e *= weight[i];
  return budget_solve(items, capacity);
}

// Estimate the deferred candidates on the tensors that need them and merge them into
// t, in the order of `all`. A tensor needs them when the solve without them (the same
// drops, the estimates as they are) gives it less than kDeferredBelowBpw, and every
// tensor does when `capacity` (the tensors' share of the budget) is below what the
// others reach. Returns on how many tensors they were estimated.
size_t add_deferred(AllocationHost& host, const std::vector<AllocationTensor>& tensors, CandidateTable& t,
                    const std::vector<std::string>& all, const std::vector<std::string>& deferred,
                    const std::vector<double>& weight, std::optional<uint64_t> capacity, bool sample) {
  std::vector<char> want = t.deferred_left;
  if (capacity) {
    CandidateTable first = t;
    size_t dominated = 0;
    for (size_t i = 0; i < first.items.size(); ++i) drop_losers(first, tensors[first.tensor[i]], i, &dominated);
    if (*capacity >= budget_min_bytes(first.items)) {
      const BudgetResult r = solve_weighted(first, weight, *capacity);
      for (size_t i = 0; i < first.items.size(); ++i) {
        const double bytes = static_cast<double>(first.items[i].bytes[r.choice[i]]);
        const double bpw = 8 * bytes / static_cast<double>(shape_numel(tensors[first.tensor[i]].shape));
        want[i] = want[i] && bpw < kDeferredBelowBpw;
      }
    }
  }
  auto rank = [&](const std::string& c) { return std::find(all.begin(), all.end(), c) - all.begin(); };
  size_t done = 0;
  for (size_t i = 0; i < t.items.size(); ++i) {
    if (!want[i]) continue;
    const size_t k = t.tensor[i];
    host.progress({AllocationProgress::Phase::kDeferred, k, 0, 0});
    std::vector<float> x;
    host.read(k, x, false);
    TensorCandidates more;
    estimate_candidates(host, k, tensors[k], x, deferred, sample, more);
    // Merged in the order of `all`, as if measured in one pass.
    const size_t n = t.usable[i].size(), m = more.usable.size();
    std::vector<std::pair<ptrdiff_t, size_t>> order;  // (rank, index: < n in t, else in more)
    for (size_t j = 0; j < n; ++j) order.emplace_back(rank(t.usable[i][j]), j);
    for (size_t j = 0; j < m; ++j) order.emplace_back(rank(more.usable[j]), n + j);
    std::stable_sort(order.begin(), order.end());
    BudgetItem item;
    std::vector<std::string> usable;
    std::vector<Estimate> estimates;
    for (const auto& [r, j] : order) {
      const bool old = j < n;
      item.bytes.push_back(old ? t.items[i].bytes[j] : more.item.bytes[j - n]);
      item.error.push_back(old ? t.items[i].error[j] : more.item.error[j - n]);
      usable.push_back(old ? t.usable[i][j] : more.usable[j - n]);
      estimates.push_back(old ? std::move(t.estimates[i][j]) : std::move(more.estimates[j - n]));
    }
    t.items[i] = std::move(item), t.usable[i] = std::move(usable), t.estimates[i] = std::move(estimates);
    for (auto& [key, rows] : more.samples) {
      release_values(rows);
      t.samples[i].emplace(key, std::move(rows));  // the same rows where the key is there already
    }
    t.deferred_left[i] = 0;
    ++done;
  }
  return done;
}

}  // namespace

AllocationResult allocate(AllocationHost& host, const std::vector<AllocationTensor>& tensors,
                          const AllocationRequest& request) {
  AllocationResult out;
  out.choice.resize(tensors.size());
  // The deferred candidates wait for a first solve (an unsampled run estimates them all).
  const std::vector<std::string>& all = request.candidates;
  std::vector<std::string> first, deferred;
  for (const std::string& c : all) (request.sampled && deferred_candidate(c) ? deferred : first).push_back(c);
  if (first.empty()) first.swap(deferred);
  out.table = measure_candidates(host, tensors, first, request.sampled, deferred);
  CandidateTable& t = out.table;
  if (t.items.empty()) return out;
  const bool by_bpw = request.bpw.has_value();
  const uint64_t capacity =
      by_bpw ? static_cast<uint64_t>(std::floor(*request.bpw * static_cast<double>(t.weights) / 8)) : request.size;
  // A size is the output file's: pass-through tensors and the header count too.
  const uint64_t reserved = t.fixed_bytes + (by_bpw ? 0 : t.pass_bytes + host.overhead());
  const std::vector<double> weight = item_weights(host, tensors, t, request.model);
  if (!deferred.empty()) {
    out.deferred_wanted = static_cast<size_t>(std::count(t.deferred_left.begin(), t.deferred_left.end(), 1));
    out.deferred_estimated =
        add_deferred(host, tensors, t, all, deferred, weight,
                     capacity >= reserved ? std::optional<uint64_t>(capacity - reserved) : std::nullopt, request.sampled);
    if (out.deferred_wanted > 0) {
      host.note(1, fmt::format("budget: the IQ2 and IQ3 candidates estimated on {} of {} tensors; a first solve "
                               "gave the others {} bpw or more",
                               out.deferred_estimated, out.deferred_wanted, kDeferredBelowBpw));
    }
  }
  for (size_t i = 0; i < t.items.size(); ++i) {
    const AllocationTensor& tensor = tensors[t.tensor[i]];
    for (const Estimate& e : t.estimates[i]) out.estimated += !e.exact;
    if (host.verbosity() >= 2) host.note(2, candidates_line(t, tensor, i));
    const std::vector<std::string> left_out = drop_losers(t, tensor, i, &out.dropped);
    if (!left_out.empty()) {
      out.snaps += left_out.size(), out.snapped_tensors += 1;
      std::string which;
      for (const std::string& c : left_out) which += " " + c;
      host.note(1, fmt::format("{}: left out{}: near a grid the values sit close to, not on", tensor.name, which));
    }
  }
  out.min_bytes = budget_min_bytes(t.items) + reserved;
  if (capacity < out.min_bytes) {
    out.feasible = false;
    return out;
  }
  auto solve = [&] { return solve_weighted(t, weight, capacity - reserved); };
  BudgetResult r = solve();
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < t.items.size(); ++i) {
      const std::vector<size_t> todo = allocation_undecided(t, i, r.choice[i]);
      if (todo.empty()) continue;
      const size_t k = t.tensor[i];
      const AllocationTensor& tensor = tensors[k];
      host.progress({AllocationProgress::Phase::kRefine, k, 0, todo.size()});
      std::vector<float> x;
      host.read(k, x, false);
      for (size_t j : todo) {
        const Estimate was = t.estimates[i][j];
        const QuantOptions o = host.options(k, t.usable[i][j]);
        Measured whole;
        const Estimate now = allocation_refine(t, i, j, host.scheme(t.usable[i][j]), x, tensor.shape, o, &whole);
        if (now.exact) host.measured_whole(k, t.usable[i][j], std::move(whole), o.device);
        if (host.verbosity() >= 1) {
          host.note(1, fmt::format("{} {}: estimated error {:.6g} (standard error {:.3g}, bias allowance {:.3g}) "
                                   "on 1/{} of the rows; {} {:.6g} ({:+.2f}%)",
                                   tensor.name, t.usable[i][j], was.error, was.se, was.bias, was.share,
                                   now.exact ? "whole" : fmt::format("on 1/{}", now.share), now.error,
                                   100 * (was.error / now.error - 1)));
        }
        (now.exact ? out.measured : out.refined) += 1;
      }
      for (auto& [key, sample] : t.samples[i]) release_values(sample);
      again = true;
    }
    if (again) r = solve();
  }
  for (size_t i = 0; i < t.items.size(); ++i) out.choice[t.tensor[i]] = t.usable[i][r.choice[i]];
  return out;
}

}  // namespace tk::quant
