// Sparse CP-ALS across processes (sparse_dist.h): the grid, the exchange of nonzeros to
// their layers, the plan of which factor rows go where, and a GramProblem whose rows are
// this process's own. The ALS loop itself is the one-process loop (cp_core.cpp).
#include "tk/decomp/sparse_dist.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <span>

#include "tk/core/error.h"
#include "tk/decomp/cp_internal.h"
#include "tk/dist/comm.h"
#include "tk/linalg/blas.h"

namespace tk::decomp {

namespace {

using cp_detail::CpState;
using cp_detail::Factors;
using dist::Comm;

using dist::compute_deadline;

template <typename T> void append(std::vector<uint8_t>& out, const T* values, size_t count) {
  const auto* p = reinterpret_cast<const uint8_t*>(values);
  out.insert(out.end(), p, p + count * sizeof(T));
}

template <typename T> std::vector<T> values_of(const std::vector<uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// A nonzero as the exchanges carry it: its `order` indices, then its value.
void pack_nonzero(std::vector<uint8_t>& out, const int64_t* idx, int order, double value) {
  append(out, idx, static_cast<size_t>(order));
  append(out, &value, 1);
}

// Every nonzero packed in `pieces`, in order, as a tensor of `shape`.
io::SparseTensor unpack_nonzeros(const std::vector<std::vector<uint8_t>>& pieces, const std::vector<int64_t>& shape) {
  const size_t order = shape.size(), record = (order + 1) * 8;
  io::SparseTensor t;
  t.shape = shape;
  for (const std::vector<uint8_t>& piece : pieces)
    for (size_t at = 0; at + record <= piece.size(); at += record) {
      const size_t before = t.indices.size();
      t.indices.resize(before + order);
      std::memcpy(&t.indices[before], piece.data() + at, order * 8);
      double value;
      std::memcpy(&value, piece.data() + at + order * 8, 8);
      t.values.push_back(value);
    }
  return t;
}

// The factors of `processes`, largest first, each to the mode with the most rows per
// part so far (ties: the lower mode): long modes are cut, short ones kept whole.
std::vector<int64_t> choose_grid(const std::vector<int64_t>& shape, int processes) {
  std::vector<int64_t> primes;
  int64_t rest = processes;
  for (int64_t f = 2; f * f <= rest; ++f)
    while (rest % f == 0) primes.push_back(f), rest /= f;
  if (rest > 1) primes.push_back(rest);
  std::sort(primes.rbegin(), primes.rend());
  std::vector<int64_t> grid(shape.size(), 1);
  for (int64_t f : primes) {
    size_t best = 0;
    for (size_t n = 1; n < shape.size(); ++n)
      if (shape[n] * grid[best] > shape[best] * grid[n]) best = n;
    grid[best] *= f;
  }
  return grid;
}

// Where everything lives: the grid, the layers, this process's nonzeros (in compact
// coordinates: the position of each index among the rows it touches) and the plan of
// the row exchanges. Built once and shared by every restart.
class Layout {
 public:
  // `mine` is emptied once its nonzeros are on their way.
  Layout(io::SparseTensor& mine, int64_t rank, Comm& comm) : comm_(comm), rank_(rank) {
    shape_ = mine.shape;
    order_ = static_cast<int>(shape_.size());
    grid_ = choose_grid(shape_, comm.size());
    cut_layers(mine);
    place_members();
    compact(exchange_nonzeros(mine));
    plan_exchanges();
  }

  Comm& comm() const { return comm_; }
  int order() const { return order_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& grid() const { return grid_; }
  // This process's nonzeros, indexed by touched row.
  const io::SparseTensor& local() const { return local_; }
  int64_t touched_rows(int n) const { return static_cast<int64_t>(touched_[n].size()); }
  // The rows of mode n this process owns: [own_lo, own_hi).
  int64_t own_lo(int n) const { return own_[n].first; }
  int64_t own_rows(int n) const { return own_[n].second - own_[n].first; }
  std::vector<int64_t> own_shape() const {
    std::vector<int64_t> rows;
    for (int n = 0; n < order_; ++n) rows.push_back(own_rows(n));
    return rows;
  }
  // The global index of every touched row of mode n (ascending).
  const std::vector<int64_t>& touched(int n) const { return touched_[n]; }

  // Partial rows (touched x R) to their owners, which add them up (rows x R, in process
  // order): the reduction after an MTTKRP.
  void reduce_rows(int n, const double* partial, double* own) const {
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(comm_.size()));
    for (size_t dest = 0; dest < out.size(); ++dest)
      for (int64_t slot : send_[n][dest]) append(out[dest], partial + slot * rank_, static_cast<size_t>(rank_));
    std::vector<std::vector<uint8_t>> in = comm_.alltoallv(std::move(out), reduce_from_[n], compute_deadline());
    std::fill(own, own + own_rows(n) * rank_, 0.0);
    for (size_t src = 0; src < in.size(); ++src) {
      const std::vector<double> rows = values_of<double>(in[src]);
      for (size_t k = 0; k < recv_[n][src].size(); ++k) {
        double* dst = own + recv_[n][src][k] * rank_;
        for (int64_t r = 0; r < rank_; ++r) dst[r] += rows[k * rank_ + r];
      }
    }
  }

  // Own rows to every process whose nonzeros touch them: the copies (touched x R).
  void spread_rows(int n, const double* own, double* copies) const {
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(comm_.size()));
    for (size_t dest = 0; dest < out.size(); ++dest)
      for (int64_t offset : recv_[n][dest]) append(out[dest], own + offset * rank_, static_cast<size_t>(rank_));
    std::vector<std::vector<uint8_t>> in = comm_.alltoallv(std::move(out), spread_from_[n], compute_deadline());
    for (size_t src = 0; src < in.size(); ++src) {
      const std::vector<double> rows = values_of<double>(in[src]);
      for (size_t k = 0; k < send_[n][src].size(); ++k)
        std::copy_n(&rows[k * rank_], rank_, copies + send_[n][src][k] * rank_);
    }
  }

  // Bytes this process sends to others in one iteration: every mode's reduction and spread.
  uint64_t bytes_per_iteration() const {
    uint64_t rows = 0;
    for (int n = 0; n < order_; ++n)
      for (int p = 0; p < comm_.size(); ++p)
        if (p != comm_.rank()) rows += send_[n][p].size() + recv_[n][p].size();
    return rows * static_cast<uint64_t>(rank_) * sizeof(double);
  }

  // The owned range [lo, hi) of mode n on process p.
  std::pair<int64_t, int64_t> owned_by(int p, int n) const {
    const int64_t c = coordinate(p, n);
    const std::vector<int>& members = members_[n][c];
    const int64_t j = std::find(members.begin(), members.end(), p) - members.begin();
    const int64_t lo = bounds_[n][c], rows = bounds_[n][c + 1] - lo, m = static_cast<int64_t>(members.size());
    return {lo + rows * j / m, lo + rows * (j + 1) / m};
  }

 private:
  int64_t coordinate(int p, int n) const {
    int64_t stride = 1;
    for (int k = order_ - 1; k > n; --k) stride *= grid_[k];
    return p / stride % grid_[n];
  }

  int64_t layer_of(int n, int64_t i) const {
    return std::upper_bound(bounds_[n].begin(), bounds_[n].end(), i) - bounds_[n].begin() - 1;
  }

  // Layers of about equal nonzero counts: the global count of every slice, summed.
  void cut_layers(const io::SparseTensor& mine) {
    bounds_.resize(static_cast<size_t>(order_));
    for (int n = 0; n < order_; ++n) {
      std::vector<int64_t> counts(static_cast<size_t>(shape_[n]), 0);
      for (int64_t e = 0; e < mine.nnz(); ++e) ++counts[mine.indices[e * order_ + n]];
      comm_.allreduce_sum(std::span<int64_t>(counts), compute_deadline());
      const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
      std::vector<int64_t>& b = bounds_[n];
      b.assign(1, 0);
      int64_t seen = 0, i = 0;
      for (int64_t part = 1; part < grid_[n]; ++part) {
        // The first slice at which `part` layers' worth of nonzeros lie before.
        while (i < shape_[n] && (seen + counts[i]) * grid_[n] <= total * part) seen += counts[i++];
        b.push_back(std::max(i, b.back()));
      }
      b.push_back(shape_[n]);
    }
  }

  void place_members() {
    members_.resize(static_cast<size_t>(order_));
    for (int n = 0; n < order_; ++n) members_[n].resize(static_cast<size_t>(grid_[n]));
    for (int p = 0; p < comm_.size(); ++p)
      for (int n = 0; n < order_; ++n) members_[n][coordinate(p, n)].push_back(p);
    for (int n = 0; n < order_; ++n) own_.push_back(owned_by(comm_.rank(), n));
  }

  // Every nonzero to the process of its layers (in process order, then file order).
  io::SparseTensor exchange_nonzeros(io::SparseTensor& mine) const {
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(comm_.size()));
    for (int64_t e = 0; e < mine.nnz(); ++e) {
      const int64_t* idx = &mine.indices[e * order_];
      int64_t dest = 0;
      for (int n = 0; n < order_; ++n) dest = dest * grid_[n] + layer_of(n, idx[n]);
      pack_nonzero(out[dest], idx, order_, mine.values[e]);
    }
    std::vector<int64_t>().swap(mine.indices);
    std::vector<double>().swap(mine.values);
    return unpack_nonzeros(comm_.alltoallv(std::move(out), compute_deadline()), shape_);
  }

  // The touched rows of every mode, and the nonzeros re-indexed by them.
  // (in place: each mode's column is rewritten once its touched rows are known).
  void compact(io::SparseTensor here) {
    local_ = std::move(here);
    local_.shape.clear();
    const int64_t nnz = local_.nnz();
    touched_.resize(static_cast<size_t>(order_));
    for (int n = 0; n < order_; ++n) {
      std::vector<int64_t>& rows = touched_[n];
      for (int64_t e = 0; e < nnz; ++e) rows.push_back(local_.indices[e * order_ + n]);
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      rows.shrink_to_fit();
      for (int64_t e = 0; e < nnz; ++e) {
        int64_t& i = local_.indices[e * order_ + n];
        i = std::lower_bound(rows.begin(), rows.end(), i) - rows.begin();
      }
      local_.shape.push_back(static_cast<int64_t>(rows.size()));
    }
  }

  // Which touched rows go to which owner, and (told once by every process) which own
  // rows come from whom, in the same order.
  void plan_exchanges() {
    const size_t processes = static_cast<size_t>(comm_.size());
    send_.assign(static_cast<size_t>(order_), std::vector<std::vector<int64_t>>(processes));
    recv_.assign(static_cast<size_t>(order_), std::vector<std::vector<int64_t>>(processes));
    for (int n = 0; n < order_; ++n) {
      std::vector<std::vector<uint8_t>> out(processes);
      for (int64_t slot = 0; slot < touched_rows(n); ++slot) {
        const int64_t i = touched_[n][slot];
        const int dest = owner(n, i);
        send_[n][dest].push_back(slot);
        append(out[dest], &i, 1);
      }
      std::vector<std::vector<uint8_t>> in = comm_.alltoallv(std::move(out), compute_deadline());
      for (size_t src = 0; src < processes; ++src)
        for (int64_t i : values_of<int64_t>(in[src])) {
          if (i < own_[n].first || i >= own_[n].second) throw internal_error("a row was sent to a process not owning it");
          recv_[n][src].push_back(i - own_[n].first);
        }
    }
    // The bytes each exchange brings, known from here on.
    const size_t row_bytes = static_cast<size_t>(rank_) * sizeof(double);
    reduce_from_.assign(static_cast<size_t>(order_), std::vector<size_t>(processes));
    spread_from_.assign(static_cast<size_t>(order_), std::vector<size_t>(processes));
    for (int n = 0; n < order_; ++n)
      for (size_t p = 0; p < processes; ++p) {
        reduce_from_[n][p] = recv_[n][p].size() * row_bytes;
        spread_from_[n][p] = send_[n][p].size() * row_bytes;
      }
  }

  int owner(int n, int64_t i) const {
    const int64_t c = layer_of(n, i);
    const std::vector<int>& members = members_[n][c];
    const int64_t lo = bounds_[n][c], rows = bounds_[n][c + 1] - lo, m = static_cast<int64_t>(members.size());
    // The member j with rows * j / m <= i - lo < rows * (j + 1) / m.
    const int64_t t = i - lo;
    int64_t j = std::min(m - 1, t * m / rows);
    while (j + 1 < m && rows * (j + 1) / m <= t) ++j;
    while (j > 0 && rows * j / m > t) --j;
    return members[j];
  }

  Comm& comm_;
  int64_t rank_;
  std::vector<int64_t> shape_, grid_;
  int order_ = 0;
  std::vector<std::vector<int64_t>> bounds_;               // per mode, grid_[n] + 1 layer bounds
  std::vector<std::vector<std::vector<int>>> members_;     // per mode and layer, its processes
  std::vector<std::pair<int64_t, int64_t>> own_;           // per mode, the owned rows
  io::SparseTensor local_;
  std::vector<std::vector<int64_t>> touched_;
  std::vector<std::vector<std::vector<int64_t>>> send_;    // [mode][dest]: touched slots
  std::vector<std::vector<std::vector<int64_t>>> recv_;    // [mode][src]: own offsets
  std::vector<std::vector<size_t>> reduce_from_, spread_from_;  // [mode][src]: bytes each brings
};

// The one-process GramProblem on this process's own rows: state.a[n] holds them, and the
// copies of the touched rows that the MTTKRP reads are kept equal to the factors by
// normalise() and sketch(), the only places the factors change between MTTKRPs.
class DistProblem : public cp_detail::GramProblem<double> {
 public:
  DistProblem(const Layout& layout, int64_t rank, double norm_sq, const CpOptions& options)
      : GramProblem<double>(layout.own_shape(), rank, norm_sq, options), layout_(layout),
        mttkrp_(layout.local(), rank) {
    copies_.resize(static_cast<size_t>(layout.order()));
    for (int n = 0; n < layout.order(); ++n) copies_[n].assign(static_cast<size_t>(layout.touched_rows(n) * rank), 0.0);
  }

  void normalise(int mode, CpState<double>& s) override {
    cp_detail::normalise_spread<double>(s, mode, layout_.own_rows(mode), rank_, sum_);
    layout_.spread_rows(mode, s.a[mode].data(), copies_[mode].data());
  }

  bool rows_spread(int /*mode*/) const override { return true; }

  double total(double v) override {
    layout_.comm().allreduce_sum(std::span<double>(&v, 1), compute_deadline());
    return v;
  }

  // The one-process sketch, its QR a Cholesky QR of the spread rows.
  void sketch(Factors<double>& gaussian) override {
    for (int n = 0; n < layout_.order(); ++n) layout_.spread_rows(n, gaussian[n].data(), copies_[n].data());
    std::vector<double> m;
    for (int n = 0; n < layout_.order(); ++n) {
      const int64_t rows = layout_.own_rows(n);
      m.resize(static_cast<size_t>(rows * rank_));
      mttkrp(n, gaussian, m.data());
      if (layout_.shape()[n] >= rank_) cp_detail::cholesky_qr_spread<double>(m, rows, rank_, sum_);
      gaussian[n] = m;
      layout_.spread_rows(n, gaussian[n].data(), copies_[n].data());
    }
  }

  // Every process's rows to process 0, in place.
  Factors<double> collect(Factors<double> a) override {
    Comm& comm = layout_.comm();
    std::vector<uint8_t> mine;
    for (const std::vector<double>& rows : a) append(mine, rows.data(), rows.size());
    std::vector<std::vector<uint8_t>> all = comm.gatherv(mine, compute_deadline());
    if (comm.rank() != 0) return {};
    Factors<double> full(a.size());
    for (int n = 0; n < layout_.order(); ++n) full[n].assign(static_cast<size_t>(layout_.shape()[n] * rank_), 0.0);
    for (int p = 0; p < comm.size(); ++p) {
      const std::vector<double> rows = values_of<double>(all[p]);
      size_t at = 0;
      for (int n = 0; n < layout_.order(); ++n) {
        const auto [lo, hi] = layout_.owned_by(p, n);
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(at), (hi - lo) * rank_, full[n].begin() + lo * rank_);
        at += static_cast<size_t>((hi - lo) * rank_);
      }
    }
    return full;
  }

 protected:
  // The MTTKRP of this process's nonzeros on the copies, reduced at the owners. `a`
  // (own rows) is not read: the copies hold the same values.
  void mttkrp(int mode, const Factors<double>& /*a*/, double* m) override {
    partial_.resize(static_cast<size_t>(layout_.touched_rows(mode) * rank_));
    mttkrp_(mode, copies_, partial_.data());
    layout_.reduce_rows(mode, partial_.data(), m);
  }

 private:
  const Layout& layout_;
  const cp_detail::SumOver<double> sum_ = [this](std::vector<double>& v) { dist::sum_in_double(layout_.comm(), v); };
  cp_detail::SparseMttkrp mttkrp_;
  Factors<double> copies_;
  std::vector<double> partial_;
};

// The rows [lo, hi) of the seeded rows x cols Gaussian matrix (cp_detail::gaussian_matrix),
// without the others: the stream is drawn up to hi and the rows before lo dropped.
std::vector<double> gaussian_rows(int64_t lo, int64_t hi, int64_t cols, uint64_t seed) {
  cp_detail::NormalRng rng(seed);
  for (int64_t k = 0; k < lo * cols; ++k) rng.next();
  std::vector<double> out(static_cast<size_t>((hi - lo) * cols));
  for (double& v : out) v = rng.next();
  return out;
}

// The Gram start of mode n (cp_sparse.cpp's) from nonzeros spread over processes: each
// fibre's nonzeros are sent to one process (by a hash of the fibre), which adds the
// fibre's products into its I_n x I_n matrix; the matrices are summed and every process
// computes the same eigenvectors and keeps its own rows.
std::vector<double> gram_start(const Layout& layout, int n, const CpOptions& o) {
  const uint64_t seed = o.seed * 1000003u + static_cast<uint64_t>(n);
  const int64_t lo = layout.own_lo(n), hi = lo + layout.own_rows(n);
  const int64_t dim = layout.shape()[n];
  if (dim > cp_detail::kMaxGramDim) return gaussian_rows(lo, hi, o.rank, seed);
  Comm& comm = layout.comm();
  const io::SparseTensor& x = layout.local();
  const int order = layout.order();
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(comm.size()));
  std::vector<int64_t> idx(static_cast<size_t>(order));
  for (int64_t e = 0; e < x.nnz(); ++e) {
    uint64_t h = 0x9e3779b97f4a7c15u;
    for (int k = 0; k < order; ++k) {
      idx[k] = layout.touched(k)[x.indices[e * order + k]];
      if (k == n) continue;
      h = (h ^ static_cast<uint64_t>(idx[k])) * 0xff51afd7ed558ccdu;
      h ^= h >> 33;
    }
    pack_nonzero(out[h % out.size()], idx.data(), order, x.values[e]);
  }
  const io::SparseTensor fibres = unpack_nonzeros(comm.alltoallv(std::move(out), compute_deadline()), layout.shape());
  std::vector<double> g = cp_detail::sparse_mode_gram(fibres, n);
  dist::sum_in_double(comm, g);
  return cp_detail::rows_of(cp_detail::leading_eigenvectors(dim, g, o.rank, seed), lo, hi, o.rank);
}

// This process's rows of restart `restart`'s starting factors (cp_detail::initial_factors).
Factors<double> start_rows(const Layout& layout, const CpOptions& o, int restart) {
  Factors<double> a;
  for (int n = 0; n < layout.order(); ++n) {
    const int64_t lo = layout.own_lo(n), hi = lo + layout.own_rows(n);
    if (restart == 0 && o.init == CpInit::kGram) {
      a.push_back(gram_start(layout, n, o));
    } else if (restart == 0 && o.init == CpInit::kGiven) {
      a.push_back(cp_detail::rows_of(o.init_factors[n], lo, hi, o.rank));
    } else {
      const uint64_t stream = o.seed * 1000003u + static_cast<uint64_t>(restart) * 1009u + static_cast<uint64_t>(n);
      a.push_back(gaussian_rows(lo, hi, o.rank, stream));
    }
  }
  return a;
}

uint64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

SparseDistStats gather_stats(const Layout& layout) {
  Comm& comm = layout.comm();
  int64_t rows = 0;
  for (int n = 0; n < layout.order(); ++n) rows += layout.touched_rows(n) + layout.own_rows(n);
  // Sums, then maxima (and negated minima).
  std::vector<int64_t> sums = {static_cast<int64_t>(layout.bytes_per_iteration()), layout.local().nnz()};
  std::vector<int64_t> maxima = {layout.local().nnz(), -layout.local().nnz(),
                                 static_cast<int64_t>(layout.bytes_per_iteration()), rows,
                                 static_cast<int64_t>(peak_rss_bytes())};
  comm.allreduce_sum(std::span<int64_t>(sums), compute_deadline());
  comm.allreduce_max(std::span<int64_t>(maxima), compute_deadline());
  SparseDistStats s;
  s.grid = layout.grid();
  s.nnz_max = maxima[0];
  s.nnz_min = -maxima[1];
  s.bytes_per_iteration_max = static_cast<uint64_t>(maxima[2]);
  s.bytes_per_iteration_mean = static_cast<double>(sums[0]) / comm.size();
  s.nnz_total = sums[1];
  s.factor_rows_max = maxima[3];
  s.peak_rss_max = static_cast<uint64_t>(maxima[4]);
  return s;
}

}  // namespace

io::SparseTensor read_tns_shared(const std::string& path, Comm& comm, const io::TnsReadOptions& options) {
  io::TnsPart part;
  std::exception_ptr error;
  constexpr int kMaxOrder = 64;
  try {
    part = io::read_tns_part(path, comm.rank(), comm.size());
    if (part.order > kMaxOrder) throw invalid_input("an entry has more than 64 indices", path);
  } catch (...) {
    error = std::current_exception();
  }
  dist::raise_together(comm, error, compute_deadline());
  // What all parts together say: the order (every part with entries must agree), the
  // largest index per mode, and whether any index is 0 (then the file is 0-based).
  std::vector<int64_t> seen(2 + kMaxOrder, -1);
  seen[0] = part.order;
  seen[1] = part.order > 0 ? -part.order : INT64_MIN;  // the smallest order with entries
  for (int k = 0; k < part.order; ++k) seen[2 + k] = part.max_index[k];
  std::vector<int64_t> zero = {part.saw_zero ? 1 : 0};
  comm.allreduce_max(std::span<int64_t>(seen), compute_deadline());
  comm.allreduce_max(std::span<int64_t>(zero), compute_deadline());
  const int order = static_cast<int>(seen[0]);
  if (order > 0 && -seen[1] != order)
    throw invalid_input("the entries have " + std::to_string(-seen[1]) + " indices in some lines and " +
                            std::to_string(order) + " in others",
                        path);
  io::SparseTensor t = std::move(part.tensor);
  if (order == 0) {
    if (options.shape.empty()) throw invalid_input("the .tns file has no entries (and no shape was given)", path);
    t.shape = options.shape;
    return t;
  }
  if (!options.shape.empty() && static_cast<int>(options.shape.size()) != order)
    throw invalid_input("the entries have " + std::to_string(order) + " indices but the declared shape has " +
                            std::to_string(options.shape.size()) + " modes",
                        path);
  const int64_t base = zero[0] ? 0 : 1;
  for (int k = 0; k < order; ++k) {
    const int64_t extent = seen[2 + k] - base + 1;
    if (!options.shape.empty() && extent > options.shape[k])
      throw invalid_input("index " + std::to_string(seen[2 + k]) + " in mode " + std::to_string(k) +
                              " lies beyond the declared extent " + std::to_string(options.shape[k]) +
                              (base ? " (1-based)" : " (0-based)"),
                          path);
    t.shape.push_back(options.shape.empty() ? extent : options.shape[k]);
  }
  if (base)
    for (int64_t& i : t.indices) --i;
  return t;
}

CpResult cp_als_sparse(io::SparseTensor mine, const CpOptions& options, Comm& comm, SparseDistStats* stats) {
  using namespace cp_detail;
  CpOptions o = options;
  o.mask = nullptr;
  if (comm.rank() != 0) o.on_iteration = {};
  validate_options(mine.shape, o);
  if (mine.order() > 64) throw invalid_input("sparse CP across processes takes at most 64 modes");
  std::exception_ptr error;
  double norm_sq = 0;
  try {
    norm_sq = checked_sparse_norm_sq(mine);
  } catch (...) {
    error = std::current_exception();
  }
  dist::raise_together(comm, error, compute_deadline());
  comm.allreduce_sum(std::span<double>(&norm_sq, 1), compute_deadline());
  linalg::SerialBlas serial_blas;
  const std::vector<int64_t> shape = mine.shape;
  const Layout layout(mine, o.rank, comm);
  auto make_problem = [&]() -> std::unique_ptr<CpProblem<double>> {
    return std::make_unique<DistProblem>(layout, o.rank, norm_sq, o);
  };
  auto init = [&](int restart) { return start_rows(layout, o, restart); };
  CpResult result = run_cp_als<double>(shape, o, norm_sq, make_problem, init);
  const SparseDistStats gathered = gather_stats(layout);  // a collective: on every process
  if (stats) *stats = gathered;
  return result;
}

}  // namespace tk::decomp
