// Option checks, output and report shared by the decomposing subcommands.
#include "settings.h"

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tk/core/error.h"

namespace tk::tdecomp {

namespace {

using nlohmann::json;

void check_tol(const std::optional<double>& tol) {
  if (tol && !(*tol > 0 && *tol < 1))
    throw usage_error(fmt::format("--tol must lie in (0, 1), got {}", cli::format_number(*tol)));
}

std::vector<int64_t> ranks_parse(const std::string& text) {
  Shape ranks = shape_parse(text);
  for (int64_t r : ranks)
    if (r <= 0) throw usage_error(fmt::format("every rank must be >= 1, got {}", r), "--ranks");
  return ranks;
}

double ratio(const Outcome& o) {
  const uint64_t stored = o.stored_bytes();
  return stored ? static_cast<double>(o.source_bytes) / static_cast<double>(stored) : 0.0;
}

// The method's own figure where it gives one (CP: without the initialisation).
double seconds_per_iteration(const decomp::Decomposition& d) {
  if (d.seconds_per_iteration > 0) return d.seconds_per_iteration;
  return d.iterations > 0 ? d.seconds / d.iterations : d.seconds;
}

std::string ranks_text(const std::vector<int64_t>& ranks) { return fmt::format("{}", fmt::join(ranks, ",")); }

// The fields every entry has.
json common_json(const Outcome& o, const char* stored) {
  const auto& d = o.model;
  return {{"name", d.name},
          {"method", decomp::method_name(d.method)},
          {"shape", d.shape},
          {"dtype", dtype_name(d.dtype)},
          {"stored", stored},
          {"seconds", d.seconds},
          {"bytes_in", o.source_bytes},
          {"bytes_out", o.stored_bytes()},
          {"compression_ratio", cli::json_number(ratio(o))},
          {"device", o.device.name()},
          {"device_reason", o.device.reason}};
}

// A kept tensor: exact, stored in its own dtype; the decomposition's size when one was
// computed.
json kept_json(const Outcome& o) {
  json j = common_json(o, "kept");
  j["rel_error"] = 0.0;
  j["fit"] = 1.0;
  if (!o.model.parts.empty()) j["decomposition_bytes"] = o.model.stored_bytes();
  return j;
}

json outcome_json(const Outcome& o) {
  if (o.kept) return kept_json(o);
  const auto& d = o.model;
  json j = common_json(o, "decomposition");
  j["ranks"] = d.ranks;
  j["factor_dtype"] = dtype_name(d.factor_dtype);
  j["rel_error"] = cli::json_number(d.rel_error);
  j["fit"] = cli::json_number(d.fit());
  j["iterations"] = d.iterations;
  j["converged"] = d.converged;
  j["seconds_per_iteration"] = seconds_per_iteration(d);
  if (d.method == decomp::Method::kTt) j["tt_shape"] = d.tt_shape;
  if (d.seed) j["seed"] = *d.seed;
  if (!o.budget.empty()) {
    json c = json::array();
    for (const auto& b : o.budget)
      c.push_back({{"factor_dtype", dtype_name(b.dtype)},
                   {"ranks", b.ranks},
                   {"bytes", b.bytes},
                   {"rel_error", cli::json_number(b.rel_error)}});
    j["budget_candidates"] = std::move(c);
  }
  if (o.spread) {
    const decomp::SparseDistStats& m = *o.spread;
    j["mpi"] = {{"ranks", shape_numel(m.grid)},
                {"grid", m.grid},
                {"nnz_per_rank_min", m.nnz_min},
                {"nnz_per_rank_max", m.nnz_max},
                {"bytes_sent_per_iteration_max", m.bytes_per_iteration_max},
                {"bytes_sent_per_iteration_mean", m.bytes_per_iteration_mean},
                {"factor_rows_per_rank_max", m.factor_rows_max},
                {"peak_rss_per_rank_max", m.peak_rss_max}};
  }
  return j;
}

}  // namespace

DType float_dtype_parse(const std::string& text, const std::string& flag) {
  auto dtype = dtype_parse(text);
  if (!dtype || !dtype_is_float(*dtype)) throw usage_error("not a float dtype: '" + text + "'", flag);
  return *dtype;
}

Settings settings_parse(const cli::Tool& tool, const DecompOptions& o) {
  Settings s;
  const cli::CommonOptions& common = tool.options();
  s.format = cli::output_format(o.output, o.format);
  if (s.format == io::FileFormat::kNpy) throw usage_error("a decomposition is several tensors; .npy holds one", o.output);
  cli::check_binary_input({o.input}, cli::stdin_is_terminal());
  tool.check_output(o.output, {o.input});
  common.check_one_stdout(o.output);
  s.f32 = o.precision == "f32";
  s.seed = common.seed.value_or(0);
  if (!o.factor_dtype.empty()) s.factor_dtype = float_dtype_parse(o.factor_dtype, "--factor-dtype");
  if (!o.budget.empty()) {
    s.budget = cli::bytes_parse(o.budget, "--budget");
    if (s.factor_dtype) throw usage_error("--budget chooses the factor dtype; leave out --factor-dtype");
  }
  check_tol(o.tol);
  const bool needs_rank = (o.method == "cp" || o.method == "rescal") && !s.budget && o.init_file.empty();
  if (o.rank_given && o.rank <= 0) throw usage_error(fmt::format("--rank must be >= 1, got {}", o.rank));
  if (needs_rank && !o.rank_given) throw usage_error(o.method + " needs --rank R");
  if (o.max_iters < 0) throw usage_error("--max-iters must be >= 0");
  if (o.max_rank < 0) throw usage_error("--max-rank must be >= 1", "--max-rank");
  if (!o.ranks.empty()) s.ranks = ranks_parse(o.ranks);
  if (!o.shape.empty()) s.shape = shape_parse(o.shape);
  if (o.method == "tucker" && !s.budget && s.ranks.empty() == !o.tol)
    throw usage_error("tucker needs exactly one of --ranks and --tol (or --budget)");
  if (o.method == "tucker" && o.tucker_method == "hooi" && s.ranks.empty())
    throw usage_error("--method hooi refines fixed ranks: give --ranks");
  if ((o.method == "tt" || o.method == "tt-round") && !s.budget && !o.tol && o.max_rank == 0)
    throw usage_error(o.method + " needs --tol and/or --max-rank" + (o.method == "tt" ? " (or --budget)" : ""));
  if (s.budget && o.method == "cp" && (o.rank_given || !o.mask.empty() || !o.init_file.empty()))
    throw usage_error("--budget chooses the rank of an unmasked CP model; leave out --rank, --mask, --init-file");
  if (s.budget && (!s.ranks.empty() || o.tol || o.max_rank))
    throw usage_error("--budget chooses the ranks; leave out --ranks, --tol, --max-rank");
  return s;
}

void write_decompositions(const cli::Tool& tool, const std::string& output, io::FileFormat format,
                          const std::vector<Outcome>& outcomes, io::Metadata metadata) {
  constexpr size_t kWhole = SIZE_MAX;  // the part index of a kept tensor
  std::vector<decomp::Decomposition> models;
  std::vector<decomp::KeptTensor> kept;
  std::vector<io::TensorInfo> infos;
  std::vector<std::pair<size_t, size_t>> origin;  // (outcome, part) of each info
  for (size_t k = 0; k < outcomes.size(); ++k) {
    const Outcome& o = outcomes[k];
    if (o.kept) {
      kept.push_back({o.model.name, o.model.method});
      infos.push_back({o.model.name, o.kept->dtype(), o.kept->shape(), o.kept->nbytes()});
      origin.emplace_back(k, kWhole);
      continue;
    }
    models.push_back(o.model);
    auto part = decomp::part_infos(o.model);
    for (size_t p = 0; p < part.size(); ++p) origin.emplace_back(k, p);
    infos.insert(infos.end(), part.begin(), part.end());
  }
  std::optional<std::string> previous;
  if (auto it = metadata.find(cli::kTkMetadataKey); it != metadata.end()) previous = it->second;
  metadata[cli::kTkMetadataKey] = decomp::decomp_metadata(models, kept, previous);
  tool.stamp(metadata);
  io::WriteOptions options;
  options.format = format;
  auto writer = cli::open_writer(output, options);
  for (size_t i : writer->begin(infos, metadata)) {
    const auto& [k, p] = origin[i];
    const auto& d = outcomes[k].model;
    writer->write(i, p == kWhole ? *outcomes[k].kept : decomp::part_tensor(d, d.parts[p]));
  }
  writer->finish();
}

void report_decompositions(const cli::Tool& tool, const std::string& command, const std::string& input,
                           const std::string& output, const std::vector<Outcome>& outcomes) {
  const cli::CommonOptions& common = tool.options();
  if (!common.quiet && common.text_report()) {
    cli::TextTable table({"tensor", "method", "shape", "ranks", "factors", "rel_error", "fit", "iters", "ms/iter",
                          "seconds", "ratio", "device"});
    for (const auto& o : outcomes) {
      const auto& d = o.model;
      // A kept tensor: "kept" for its ranks, its own dtype, exact.
      const double error = o.kept ? 0.0 : d.rel_error;
      table.add_row({d.name, decomp::method_name(d.method), shape_to_string(d.shape),
                     o.kept ? std::string("kept") : ranks_text(d.ranks),
                     dtype_name(o.kept ? d.dtype : d.factor_dtype), fmt::format("{:.3e}", error),
                     fmt::format("{:.6f}", 1.0 - error),
                     std::to_string(d.iterations), fmt::format("{:.2f}", 1e3 * seconds_per_iteration(d)),
                     fmt::format("{:.3f}", d.seconds), fmt::format("{:.2f}", ratio(o)), o.device.name()});
    }
    std::string text = table.render();
    for (const auto& o : outcomes)
      if (o.spread)
        text += fmt::format("{}: {} MPI ranks as a {} grid, {}..{} nonzeros a rank, {} sent a rank per iteration "
                            "(most), peak memory {} a rank (most)\n",
                            o.model.name, shape_numel(o.spread->grid), fmt::join(o.spread->grid, "x"),
                            o.spread->nnz_min, o.spread->nnz_max, cli::format_bytes(o.spread->bytes_per_iteration_max),
                            cli::format_bytes(o.spread->peak_rss_max));
    // stdout carries the data when the output is "-": the table goes to stderr then.
    if (cli::is_std_stream(output))
      std::fputs(text.c_str(), stderr);
    else
      cli::write_stdout(text);
  }
  if (common.json) {
    json tensors = json::array();
    for (const auto& o : outcomes) tensors.push_back(outcome_json(o));
    cli::write_json({{"command", command}, {"input", input}, {"output", output}, {"tensors", std::move(tensors)}},
                    *common.json);
  }
}

}  // namespace tk::tdecomp
