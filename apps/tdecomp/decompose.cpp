// tdecomp cp | tucker | tt | rescal: read, decompose each selected tensor, write, report.
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "cli/device.h"
#include "cli/display_text.h"
#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/path_args.h"
#include "cli/progress.h"
#include "input.h"
#include "settings.h"
#include "tk/core/error.h"
#include "tk/decomp/decompose.h"
#include "tk/decomp/dense_dist.h"
#include "tk/decomp/sparse_dist.h"
#include "tk/dist/comm.h"
#include "tk/io/stream.h"

namespace tk::tdecomp {

namespace {

using decomp::Decomposition;

// Everything one tensor's decomposition needs besides its data.
struct Job {
  const DecompOptions& o;
  const Settings& s;
  const cli::Tool& tool;
  cli::Progress& progress;
  const Source& source;
  bool lead = true;  // the process that reports (rank 0 under MPI)
};

decomp::Method method_of(const std::string& method) {
  if (method == "cp") return decomp::Method::kCp;
  if (method == "tucker") return decomp::Method::kTucker;
  if (method == "tt") return decomp::Method::kTt;
  return decomp::Method::kRescal;
}

// The source tensor stored unchanged; `d` names it (and is the decomposition that was
// not smaller, when one was computed).
Outcome kept(const Source& src, Decomposition d) {
  Outcome o{std::move(d), src.tensor.nbytes(), {}, {}};
  o.kept = src.tensor;
  return o;
}

// `d` in its factor dtype, or the tensor itself where that is not smaller (`keep`
// makes that outcome). The reported error is that of the factors as stored: rounded to
// a narrower dtype, then measured (`error_of`). `source_bytes`: the tensor's.
Outcome stored(const Job& job, uint64_t source_bytes, Decomposition d,
               const std::function<double(const Decomposition&)>& error_of,
               const std::function<Outcome(Decomposition)>& keep) {
  const Source& src = job.source;
  d.notes["precision"] = job.s.f32 ? "f32" : "f64";
  const DType factor_dtype = job.s.factor_dtype.value_or(decomp::default_factor_dtype(d.dtype));
  if (decomp::store_as(d, factor_dtype, source_bytes, error_of) == decomp::Stored::kTensor) {
    if (job.lead)
      job.tool.warning(fmt::format("{}: the decomposition ({} bytes) is not smaller than the tensor ({} bytes); the "
                                   "tensor is stored unchanged",
                                   src.name, d.stored_bytes(), source_bytes));
    return keep(std::move(d));
  }
  const bool bounded = d.method == decomp::Method::kTucker || d.method == decomp::Method::kTt;
  if (bounded && job.o.tol && d.rel_error > *job.o.tol && job.lead)
    job.tool.warning(fmt::format("{}: the factors stored as {} have relative error {:.3e}, above --tol {}; "
                                 "--factor-dtype f64 keeps the bound",
                                 src.name, dtype_name(d.factor_dtype), d.rel_error, cli::format_number(*job.o.tol)));
  return Outcome{std::move(d), source_bytes, {}, {}};
}

template <typename T>
Outcome stored(const Job& job, const decomp::DenseView<T>& x, const uint8_t* mask, Decomposition d) {
  return stored(
      job, job.source.tensor.nbytes(), std::move(d),
      [&](const Decomposition& m) { return decomp::reconstruction_error(x, m, mask); },
      [&](Decomposition m) { return kept(job.source, std::move(m)); });
}

decomp::IterationCallback iteration_callback(const Job& job) {
  const bool verbose = job.tool.options().verbose > 0;
  if (!verbose && !job.progress.enabled()) return {};
  return [&job, verbose](const decomp::IterationInfo& it) {
    std::string text = fmt::format("{}: restart {} iteration {} fit {:.8f} change {:.2e} ({:.2f} s)", job.source.name,
                                   it.restart, it.iteration, it.fit, it.fit_change, it.seconds);
    if (verbose)
      job.tool.verbose(1, text);
    else
      job.progress.show(text);
  };
}

// ST-HOSVD's steps, one per mode (each a Gram matrix, its eigenvectors and a projection).
std::function<void(int, int, double)> mode_callback(const Job& job) {
  const bool verbose = job.tool.options().verbose > 0;
  if (!verbose && !job.progress.enabled()) return {};
  return [&job, verbose](int done, int modes, double seconds) {
    std::string text = fmt::format("{}: ST-HOSVD mode {}/{} ({:.2f} s)", job.source.name, done, modes, seconds);
    if (verbose)
      job.tool.verbose(1, text);
    else
      job.progress.show(text);
  };
}

decomp::CpOptions cp_options(const Job& job, int rank) {
  const DecompOptions& o = job.o;
  decomp::CpOptions c;
  c.rank = rank;
  c.init = o.init == "random" ? decomp::CpInit::kRandom : decomp::CpInit::kGram;
  c.restarts = o.restarts;
  if (o.tol) c.tol = *o.tol;
  if (o.max_iters > 0) c.max_iters = o.max_iters;
  c.max_seconds = o.max_seconds;
  c.nonneg = o.nonneg;
  c.l2 = o.l2;
  c.seed = job.s.seed;
  c.on_iteration = iteration_callback(job);
  return c;
}

// --init-file: the CP factors stored for this tensor (or the file's only CP model).
void load_init_file(const Job& job, decomp::CpOptions& c) {
  auto reader = cli::open_reader(job.tool, job.o.init_file);
  auto tk = reader->metadata().find(cli::kTkMetadataKey);
  auto models = decomp::parse_decomp_metadata(tk == reader->metadata().end() ? std::nullopt
                                                                             : std::optional<std::string>(tk->second));
  const Decomposition* pick = nullptr;
  for (const auto& m : models)
    if (m.method == decomp::Method::kCp && (m.name == job.source.name || models.size() == 1)) pick = &m;
  const std::string file = cli::input_display_name(job.o.init_file);
  if (!pick) throw invalid_input("no CP model for tensor '" + job.source.name + "'", file);
  Decomposition init = *pick;
  decomp::load_parts(init, [&](const std::string& name) {
    auto index = reader->find(name);
    if (!index) throw invalid_input("missing part '" + name + "'", file);
    return reader->read(*index);
  });
  if (init.shape != job.source.tensor.shape())
    throw invalid_input("the initial model's shape " + shape_to_string(init.shape) + " differs from the tensor's", file);
  if (c.rank == 0) c.rank = static_cast<int>(init.ranks[0]);
  if (c.rank != init.ranks[0]) throw usage_error(fmt::format("--rank {} differs from the initial model's rank {}", c.rank, init.ranks[0]));
  c.init = decomp::CpInit::kGiven;
  c.init_factors = decomp::to_cp(init).factors;
}

decomp::TuckerOptions tucker_options(const Job& job) {
  decomp::TuckerOptions t;
  t.ranks = job.s.ranks;
  if (job.o.tol) t.tol = *job.o.tol;
  t.method = job.o.tucker_method == "hooi" ? decomp::TuckerMethod::kHooi : decomp::TuckerMethod::kSthosvd;
  if (job.o.max_iters > 0) t.max_iters = job.o.max_iters;
  t.on_iteration = iteration_callback(job);
  t.on_mode = mode_callback(job);
  return t;
}

decomp::TtOptions tt_options(const DecompOptions& o) {
  decomp::TtOptions t;
  if (o.tol) t.tol = *o.tol;
  t.max_rank = o.max_rank;
  return t;
}

decomp::RescalOptions rescal_options(const Job& job) {
  const DecompOptions& o = job.o;
  decomp::RescalOptions r;
  r.rank = o.rank;
  r.lambda_a = o.lambda_a.value_or(o.l2);
  r.lambda_r = o.lambda_r.value_or(o.l2);
  r.nonneg = o.nonneg;
  if (o.tol) r.tol = *o.tol;
  if (o.max_iters > 0) r.max_iters = o.max_iters;
  r.max_seconds = o.max_seconds;
  r.seed = job.s.seed;
  r.on_iteration = iteration_callback(job);
  return r;
}

// The flags as the library's options of the method that runs.
decomp::DecomposeOptions method_options(const Job& job) {
  decomp::DecomposeOptions m;
  m.method = method_of(job.o.method);
  switch (m.method) {
    case decomp::Method::kCp: m.cp = cp_options(job, job.o.rank); break;
    case decomp::Method::kTucker: m.tucker = tucker_options(job); break;
    case decomp::Method::kTt: m.tt = tt_options(job.o); break;
    case decomp::Method::kRescal: m.rescal = rescal_options(job); break;
  }
  return m;
}

// --ranks gives one rank per mode of the tensor.
void check_ranks_length(const Settings& s, const Shape& shape, const std::string& where) {
  if (!s.ranks.empty() && s.ranks.size() != shape.size())
    throw usage_error(fmt::format("--ranks has {} entries for a tensor of order {}", s.ranks.size(), shape.size()),
                      where);
}

decomp::DecomposeSource source_of(const Source& src) {
  return {src.name, src.tensor.shape(), src.tensor.dtype()};
}

// Where this run's --device puts `options` for a tensor of `elements` values; a refusal
// names the flag.
device::Placement placement(const cli::Tool& tool, const decomp::DecomposeOptions& options, uint64_t elements) {
  const device::Request& request = tool.options().device;
  return located("--device " + cli::device_name(request),
                 [&] { return decomp::placement(request, options, elements); });
}

// Run `work` where m.device says. Under --device auto, a GPU that cannot take the
// tensor (out of memory, taken by another process: kUnavailable) hands it to the CPU,
// and m.device says so; an explicit --device cuda fails instead.
template <typename Work>
auto on_device(const cli::Tool& tool, decomp::DecomposeOptions& m, Work&& work) -> decltype(work()) {
  if (!m.device.cuda) return work();
  std::string why;
  return device::or_on_cpu(tool.options().device, work, [&] {
    m.device = device::Placement{false, 0, "the GPU could not take it (" + why + ")"};
    return work();
  }, &why);
}

// --budget: search ranks and factor dtype (budget.h) with the method's options `m`.
template <typename T>
Outcome run_budget(const Job& job, const decomp::DenseView<T>& x, const decomp::DecomposeOptions& m) {
  decomp::BudgetChoice choice = decomp::decompose_within_budget(x, source_of(job.source), m, *job.s.budget);
  choice.model.notes["budget_bytes"] = std::to_string(*job.s.budget);
  Outcome out{std::move(choice.model), job.source.tensor.nbytes(), std::move(choice.candidates), {}};
  out.device = m.device;
  return out;
}

template <typename T> Outcome decompose_dense(const Job& job) {
  const Source& src = job.source;
  const DecompOptions& o = job.o;
  Shape shape = src.tensor.shape();
  if (o.method == "tt" && !job.s.shape.empty()) {
    if (shape_numel(job.s.shape) != shape_numel(shape))
      throw usage_error(fmt::format("--shape {} does not hold the {} elements of {}", shape_to_string(job.s.shape),
                                    shape_numel(shape), shape_to_string(shape)),
                        src.where);
    shape = job.s.shape;
  }
  check_order(shape, src.where);
  if (o.method == "tucker") check_ranks_length(job.s, shape, src.where);
  if (o.method == "rescal" && (shape.size() != 3 || shape[0] != shape[1]))
    throw invalid_input("RESCAL needs an n x n x m tensor, got " + shape_to_string(shape), src.where);

  if (job.s.budget && !decomp::smaller_than_tensor(*job.s.budget, src.tensor.nbytes())) {
    job.tool.warning(fmt::format("{}: the budget ({} bytes) is not smaller than the tensor ({} bytes); the tensor is "
                                 "stored unchanged",
                                 src.name, *job.s.budget, src.tensor.nbytes()));
    Decomposition d;
    d.name = src.name;
    d.method = method_of(o.method);
    d.shape = src.tensor.shape();
    d.dtype = src.tensor.dtype();
    return kept(src, std::move(d));
  }

  std::vector<uint8_t> mask;
  if (!o.mask.empty()) mask = read_mask(o.mask, src);
  const uint8_t* observed = mask.empty() ? nullptr : mask.data();
  ComputeData<T> data(src, observed);
  // A converted copy (f32 computed in f64) leaves the input's pages unused until the
  // tensor is written unchanged, if it is: memory for the tensor, not three times it.
  if (static_cast<const void*>(data.data()) != src.tensor.data() && src.release) src.release();
  decomp::DenseView<T> x{data.data(), shape};
  decomp::DecomposeOptions m = method_options(job);
  if (m.method == decomp::Method::kCp) m.cp.mask = observed;
  m.device = placement(job.tool, m, shape_numel(shape));
  if (job.s.budget) return on_device(job.tool, m, [&] { return run_budget(job, x, m); });

  if (m.method == decomp::Method::kCp && !o.init_file.empty()) load_init_file(job, m.cp);
  Decomposition d = on_device(job.tool, m, [&] { return decomp::decompose(x, source_of(src), m); });
  if (m.method == decomp::Method::kCp) {
    d.notes["init"] = o.init_file.empty() ? o.init : "file";
    if (observed) d.notes["masked"] = "true";
  } else if (m.method == decomp::Method::kTucker) {
    d.notes["algorithm"] = o.tucker_method;
  }
  Outcome out = stored(job, x, observed, std::move(d));
  out.device = m.device;
  return out;
}

// Sparse CP's result as reported and stored: its source is `nnz` coordinates and values.
Outcome sparse_outcome(const std::string& name, const Shape& shape, int64_t nnz, const Settings& s,
                       decomp::CpResult result) {
  Decomposition d = decomp::from_cp(name, shape, DType::kF64, std::move(result));
  d.seed = s.seed;
  d.notes["sparse_nnz"] = std::to_string(nnz);
  d.notes["precision"] = "f64";
  d.factor_dtype = DType::kF64;
  const uint64_t coo_bytes = static_cast<uint64_t>(nnz) * (8 * shape.size() + 8);
  return Outcome{std::move(d), coo_bytes, {}, {}};
}

// A .tns input: sparse CP, or a dense method on the densified tensor when it is small.
std::vector<Outcome> decompose_tns(const cli::Tool& tool, const DecompOptions& o, const Settings& s, Input& input,
                                   cli::Progress& progress) {
  const std::string file = cli::input_display_name(o.input);
  io::TnsReadOptions read_options;
  if (o.method == "cp") read_options.shape = s.shape;
  io::SparseTensor sparse = input.read_tns(read_options);
  const std::string name = tns_tensor_name(o.input);
  if (o.explain) std::fputs((cli::escape_text(name) + ": decompose\n").c_str(), stderr);
  if (o.method != "cp" || s.budget || !o.mask.empty()) {
    if (o.method == "cp") throw usage_error("--budget and --mask need a dense input, not .tns");
    Source src = densify(sparse, name, file);
    Job job{o, s, tool, progress, src};
    return {s.f32 ? decompose_dense<float>(job) : decompose_dense<double>(job)};
  }
  Source src{name, file + ": tensor '" + name + "'", {}};
  check_order(sparse.shape, src.where);
  if (!o.init_file.empty()) throw usage_error("--init-file needs a dense input, not .tns");
  if (s.f32) tool.warning("sparse CP computes in f64; --precision f32 is ignored");
  Job job{o, s, tool, progress, src};
  decomp::CpOptions c = cp_options(job, o.rank);
  Outcome out = sparse_outcome(name, sparse.shape, sparse.nnz(), s, decomp::cp_als_sparse(sparse, c));
  Decomposition& d = out.model;
  d.factor_dtype = s.factor_dtype.value_or(DType::kF64);
  if (d.factor_dtype != DType::kF64) {
    decomp::round_parts(d, d.factor_dtype);
    d.rel_error = decomp::reconstruction_error(sparse, d);
  }
  return {std::move(out)};
}

// CP or Tucker of tensor `index` across the ranks of an MPI job (dense_dist.h): every
// rank reads its slab of the cut mode (CP: mode 0; Tucker: the one projected last);
// rank 0's outcome is the one reported.
template <typename T>
Outcome dense_spread(const cli::Tool& tool, const DecompOptions& o, const Settings& s, cli::Progress& progress,
                     io::TensorReader& reader, size_t index, const std::string& file, dist::Comm& comm) {
  const io::TensorInfo& info = reader.tensors()[index];
  const bool cp = o.method == "cp";
  Source src{info.name, fmt::format("{}: tensor '{}'", file, info.name), {}};
  Job job{o, s, tool, progress, src, comm.rank() == 0};
  const decomp::TuckerOptions t = cp ? decomp::TuckerOptions{} : tucker_options(job);
  const size_t mode = cp ? 0 : decomp::tucker_cut_mode(info.shape, t);
  const auto [lo, hi] = decomp::slab_rows(info.shape[mode], comm.rank(), comm.size());
  // The slab, converted and checked: an error on any rank (a non-finite value, a block
  // it cannot read) is every rank's.
  std::optional<ComputeData<T>> data;
  std::exception_ptr error;
  try {
    src = named_source(info, file);
    check_order(info.shape, src.where);
    if (!cp) check_ranks_length(s, info.shape, src.where);
    src.tensor = reader.read_slab(index, mode, lo, hi);
    src.slab = SlabPlace{mode, lo, info.shape};
    data.emplace(src, nullptr);
  } catch (...) {
    error = std::current_exception();
  }
  dist::raise_together(comm, error, dist::compute_deadline());
  Shape local = info.shape;
  local[mode] = hi - lo;
  const decomp::DenseView<T> x{data->data(), local};
  Decomposition d;
  try {
    if (cp) {
      d = decomp::from_cp(info.name, info.shape, info.dtype, decomp::cp_als(x, info.shape, comm, cp_options(job, o.rank)));
      d.notes["init"] = o.init;
    } else {
      d = decomp::from_tucker(info.name, info.shape, info.dtype, decomp::tucker(x, info.shape, comm, t));
      d.notes["algorithm"] = o.tucker_method;
    }
  } catch (const Error& e) {
    throw e.with_context(src.where);
  }
  return stored(
      job, dtype_storage_bytes(info.dtype, shape_numel(info.shape)), std::move(d),
      [&](const Decomposition& m) {
        const decomp::ErrorSums mine = decomp::reconstruction_sums(x, decomp::slab_of(m, mode, lo, hi));
        std::vector<double> sums = {mine.diff, mine.norm};
        comm.allreduce_sum(std::span<double>(sums), dist::compute_deadline());
        return decomp::ErrorSums{sums[0], sums[1]}.relative();
      },
      [&](Decomposition m) {
        // Kept whole: rank 0 reads the tensor itself (it is no larger than its model).
        if (comm.rank() == 0) src.tensor = reader.read(index);
        return kept(src, std::move(m));
      });
}

// Sparse CP of a .tns file across the ranks of an MPI job (sparse_dist.h): every rank
// reads its part of the file; rank 0 alone gets the factors, to write and report.
std::vector<Outcome> decompose_tns_spread(const cli::Tool& tool, const DecompOptions& o, const Settings& s,
                                          dist::Comm& comm, cli::Progress& progress) {
  if (s.budget || !o.mask.empty()) throw usage_error("--budget and --mask need a dense input, not .tns");
  if (!o.init_file.empty()) throw usage_error("--init-file needs a dense input, not .tns");
  if (s.factor_dtype && *s.factor_dtype != DType::kF64)
    throw usage_error("across MPI ranks sparse CP stores f64 factors (the error of narrower ones would need the whole "
                      "tensor on one rank); run without --factor-dtype");
  const std::string file = cli::input_display_name(o.input);
  // Each rank opens the file by path for its part; standard input is one process's.
  if (cli::is_std_stream(o.input)) throw usage_error("a .tns read in parts must be a file every reader can open", file);
  io::TnsReadOptions read_options;
  read_options.shape = s.shape;
  io::SparseTensor mine = decomp::read_tns_shared(o.input, comm, read_options);
  const std::string name = tns_tensor_name(o.input);
  Source src{name, file + ": tensor '" + name + "'", {}};
  check_order(mine.shape, src.where);
  const bool lead = comm.rank() == 0;
  if (s.f32 && lead) tool.warning("sparse CP computes in f64; --precision f32 is ignored");
  Job job{o, s, tool, progress, src};
  const Shape shape = mine.shape;
  decomp::SparseDistStats stats;
  decomp::CpResult result = decomp::cp_als_sparse(std::move(mine), cp_options(job, o.rank), comm, &stats);
  if (!lead) return {};
  Outcome out = sparse_outcome(name, shape, stats.nnz_total, s, std::move(result));
  out.spread = stats;
  return {std::move(out)};
}

}  // namespace

int run_decompose(cli::Tool& tool, const DecompOptions& o) {
  const Settings s = settings_parse(tool, o);
  cli::Progress progress(tool.options().show_progress && tool.options().verbose == 0, tool.name());
  std::vector<Outcome> outcomes;
  io::Metadata metadata;
  // Under mpirun or srun, sparse CP and Tucker spread over the ranks; nothing else does.
  std::unique_ptr<dist::Comm> comm = dist::world();
  if (comm && comm->size() > 1 && cli::is_std_stream(o.input))
    throw usage_error("under mpirun the input must be a file that every rank can read, not standard input");
  Input input(o.input);
  const bool spread_cp = comm && input.is_tns() && o.method == "cp";
  const bool spread_dense = comm && !input.is_tns() && (o.method == "cp" || o.method == "tucker");
  if (comm && comm->size() > 1 && !spread_cp && !spread_dense)
    throw usage_error("under mpirun only cp, tucker and rank are spread over the ranks; run tdecomp " + o.method +
                      " without mpirun");
  if (spread_dense && s.budget) throw usage_error("under mpirun, " + o.method + " takes no --budget");
  if (spread_dense && (!o.mask.empty() || !o.init_file.empty()))
    throw usage_error("under mpirun, cp takes neither --mask nor --init-file");
  // --device cuda for work without a GPU path is refused before anything is read.
  const device::Request& request = tool.options().device;
  if (spread_cp || spread_dense) cli::require_no_gpu(request, "a decomposition across MPI ranks");
  if (input.is_tns() && o.method == "cp" && !s.budget && o.mask.empty()) cli::require_no_gpu(request, "sparse CP");
  if (!o.mask.empty()) cli::require_no_gpu(request, "masked CP-ALS");
  decomp::DecomposeOptions method;
  method.method = method_of(o.method);
  placement(tool, method, 0);
  const bool lead = !comm || comm->rank() == 0;
  if (spread_cp) {
    outcomes = decompose_tns_spread(tool, o, s, *comm, progress);
  } else if (input.is_tns()) {
    outcomes = decompose_tns(tool, o, s, input, progress);
  } else {
    auto reader = input.open_reader();
    if (lead) cli::warn_skipped(tool, *reader, o.input);
    metadata = reader->metadata();
    const std::string file = cli::input_display_name(o.input);
    const Shape reshape = o.method == "tt" ? s.shape : Shape{};
    for (size_t index : tensors_to_decompose(tool, *reader, o.method, reshape, o.explain, lead)) {
      if (spread_dense) {
        outcomes.push_back(s.f32 ? dense_spread<float>(tool, o, s, progress, *reader, index, file, *comm)
                                 : dense_spread<double>(tool, o, s, progress, *reader, index, file, *comm));
        continue;
      }
      Source src = read_source(*reader, index, file);
      src.release = [&reader, index] { reader->release(index); };
      Job job{o, s, tool, progress, src};
      outcomes.push_back(s.f32 && o.method != "rescal" ? decompose_dense<float>(job) : decompose_dense<double>(job));
    }
  }
  if (!lead) return cli::kExitOk;  // rank 0 writes and reports
  progress.clear();
  write_decompositions(tool, o.output, s.format, outcomes, std::move(metadata));
  report_decompositions(tool, o.method, o.input, o.output, outcomes);
  return cli::kExitOk;
}

}  // namespace tk::tdecomp
