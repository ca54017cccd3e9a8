// tdecomp rank cp|rescal: rank selection table, --json and --svg.
#include <cmath>
#include <deque>

#include <fmt/format.h>

#include "cli/device.h"
#include "cli/input.h"
#include "cli/display_text.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "cli/svg_plot.h"
#include "input.h"
#include "rank_parts.h"
#include "tdecomp.h"
#include "tk/core/error.h"
#include "tk/decomp/rank_select.h"
#include "tk/io/stream.h"

namespace tk::tdecomp {

namespace {

using nlohmann::json;

std::pair<int, int> range_parse(const std::string& text) {
  int lo = 0, hi = 0;
  char colon = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &lo, &colon, &hi, &tail) != 3 || colon != ':')
    throw usage_error("expected MIN:MAX, got '" + text + "'", "--range");
  if (lo < 1 || hi < lo) throw usage_error("the rank range must satisfy 1 <= MIN <= MAX, got '" + text + "'", "--range");
  return {lo, hi};
}

std::string table(const decomp::RankSelection& sel, bool cp) {
  std::vector<std::string> header = {"rank", "chosen", "rel_error", "silhouette_min", "silhouette_mean", "stable",
                                     "levelled"};
  if (cp) header.push_back("corcondia");
  cli::TextTable t(header);
  for (const auto& s : sel.scores) {
    std::vector<std::string> row = {std::to_string(s.rank),
                                    s.rank == sel.chosen ? "*" : "",
                                    fmt::format("{:.4e}", s.rel_error),
                                    fmt::format("{:.3f}", s.silhouette_min),
                                    fmt::format("{:.3f}", s.silhouette_mean),
                                    s.stable ? "yes" : "no",
                                    s.levelled ? "yes" : "no"};
    if (cp) row.push_back(fmt::format("{:.1f}", s.corcondia));
    t.add_row(row);
  }
  return t.render();
}

json selection_json(const std::string& name, const decomp::RankSelection& sel, bool cp) {
  json ranks = json::array();
  for (const auto& s : sel.scores) {
    json r = {{"rank", s.rank},
              {"rel_error", cli::json_number(s.rel_error)},
              {"rel_error_min", cli::json_number(s.rel_error_min)},
              {"silhouette_min", cli::json_number(s.silhouette_min)},
              {"silhouette_mean", cli::json_number(s.silhouette_mean)},
              {"stable", s.stable},
              {"levelled", s.levelled}};
    if (cp) r["corcondia"] = cli::json_number(s.corcondia);
    ranks.push_back(std::move(r));
  }
  return {{"name", name}, {"chosen", sel.chosen}, {"ranks", std::move(ranks)}};
}

cli::LineChart chart(const std::string& name, const decomp::RankSelection& sel) {
  cli::LineChart c;
  c.title = "Rank selection: " + name;
  c.x_label = "rank";
  c.y_label = "relative error";
  c.log_y = true;
  c.y2_label = "silhouette";
  cli::Series err{"relative error", {}, {}, false, {}}, smin{"silhouette (min)", {}, {}, false, {}},
      smean{"silhouette (mean)", {}, {}, false, {}};
  for (const auto& s : sel.scores) {
    err.x.push_back(s.rank);
    err.y.push_back(s.rel_error);
    smin.x.push_back(s.rank);
    smin.y.push_back(s.silhouette_min);
    smean.x.push_back(s.rank);
    smean.y.push_back(s.silhouette_mean);
  }
  c.series = {err};
  c.right = {smin, smean};
  return c;
}

void write_text_file(const std::string& path, const std::string& text) {
  auto out = cli::open_output(path);
  out->write(text.data(), text.size());
  out->commit();
}

}  // namespace

int run_rank(cli::Tool& tool, const RankOptions& o) {
  const cli::CommonOptions& common = tool.options();
  cli::require_no_gpu(common.device, "tdecomp rank");
  const auto [lo, hi] = range_parse(o.range);
  SweepKey key;
  key.method = o.method;
  decomp::RankSelectOptions& options = key.options;
  options.min_rank = lo;
  options.max_rank = hi;
  options.realisations = o.realisations;
  options.noise = o.noise;
  options.threshold = o.threshold;
  options.max_iters = o.max_iters;
  options.tol = o.tol;
  options.seed = common.seed.value_or(0);
  if (!(o.tol > 0 && o.tol < 1)) throw usage_error("--tol must lie in (0, 1)");
  if (o.realisations < 2) throw usage_error("rank selection needs at least 2 realisations", "--realisations");
  if (!o.svg.empty()) cli::check_output_not_directory(o.svg);
  cli::check_binary_input({o.input}, cli::stdin_is_terminal());
  const bool cp = o.method == "cp";

  // Who fits which realisations: every rank of an MPI job its share, a job-array task
  // (--task) its share into a --partial file, --merge none.
  std::unique_ptr<dist::Comm> comm = dist::world();
  const bool mpi = comm != nullptr && comm->size() > 1;
  if (!o.merge.empty() && (!o.task.empty() || !o.partial.empty() || mpi))
    throw usage_error("--merge scores the tasks' --partial files; run it once, without --task, --partial or mpirun");
  if (mpi && (!o.task.empty() || !o.partial.empty()))
    throw usage_error("under mpirun the ranks share the realisations; --task and --partial are for job arrays");
  if (!o.task.empty() && o.partial.empty()) throw usage_error("--task fits a share of the realisations; name its --partial file");
  if (!o.partial.empty() && !o.svg.empty()) throw usage_error("--svg plots the scores, which --partial does not compute");
  if (!o.partial.empty()) cli::check_output_not_directory(o.partial);
  Task task = o.task.empty() ? Task{} : task_parse(o.task);
  if (mpi) task = {comm->rank(), comm->size()};
  const bool lead = !mpi || comm->rank() == 0;

  const std::string file = cli::input_display_name(o.input);
  std::vector<Source> sources;
  std::deque<ComputeData<double>> values;  // each source in double, for fitting and scoring
  auto read_sources = [&] {
    Input input(o.input);
    if (input.is_tns()) {
      io::SparseTensor sparse = input.read_tns();
      sources.push_back(densify(sparse, tns_tensor_name(o.input), file));
    } else {
      auto reader = input.open_reader();
      if (lead) cli::warn_skipped(tool, *reader, o.input);
      // Tensors the method cannot take are skipped with a notice, as in the decompositions.
      for (size_t index : tensors_to_decompose(tool, *reader, o.method, {}, false)) {
        sources.push_back(read_source(*reader, index, file));
      }
    }
    if (!o.svg.empty() && sources.size() != 1) throw usage_error("--svg plots one tensor; select it with -t");
    for (const Source& src : sources) {
      check_order(src.tensor.shape(), src.where);
      values.emplace_back(src, nullptr);
    }
  };

  cli::Progress progress(common.show_progress && lead, tool.name());
  // This process's share of every tensor's realisations.
  auto fit = [&] {
    std::vector<TensorPart> parts;
    for (size_t i = 0; i < sources.size(); ++i) {
      const Source& src = sources[i];
      decomp::DenseView<double> x{values[i].data(), src.tensor.shape()};
      decomp::RankSelectOptions mine = options;
      mine.on_realisation = [&](int rank, int m, double error) {
        progress.show(fmt::format("{}: rank {} realisation {}/{} error {:.4e}", src.name, rank, m + 1, o.realisations, error));
        if (lead) tool.verbose(1, fmt::format("{}: rank {} realisation {} rel_error {:.6e}", src.name, rank, m + 1, error));
      };
      try {
        parts.push_back({src.name, src.tensor.shape(),
                         cp ? decomp::realise_cp(x, mine, task_filter(task, options))
                            : decomp::realise_rescal(x, mine, task_filter(task, options))});
      } catch (const Error& e) {
        throw e.with_context(src.where);
      }
    }
    progress.clear();
    return parts;
  };

  // Score every process's parts and report (the lead process only).
  auto finish = [&](std::vector<std::vector<TensorPart>> all) {
    json results = json::array();
    std::string text;
    for (size_t i = 0; i < sources.size(); ++i) {
      const Source& src = sources[i];
      std::vector<decomp::Realisation> reals;
      for (auto& parts : all)
        for (TensorPart& part : parts) {
          if (part.name != src.name) continue;
          if (part.shape != src.tensor.shape())
            throw invalid_input("the --partial file's tensor has shape " + shape_to_string(part.shape) +
                                ", the input's " + shape_to_string(src.tensor.shape()), src.where);
          for (auto& r : part.realisations) reals.push_back(std::move(r));
        }
      decomp::DenseView<double> x{values[i].data(), src.tensor.shape()};
      decomp::RankSelection sel;
      try {
        sel = cp ? decomp::score_cp(x, options, reals) : decomp::score_rescal(x, options, reals);
      } catch (const Error& e) {
        throw e.with_context(src.where);
      }
      text += fmt::format("{} ({} {}): chosen rank {}\n", cli::escape_text(src.name), o.method,
                          shape_to_string(src.tensor.shape()), sel.chosen);
      text += table(sel, cp);
      results.push_back(selection_json(src.name, sel, cp));
      if (!o.svg.empty()) write_text_file(o.svg, cli::render_svg(chart(src.name, sel)));
    }
    if (common.text_report()) cli::write_stdout(text);
    if (common.json)
      cli::write_json({{"command", "rank"}, {"method", o.method}, {"input", o.input}, {"tensors", results}},
                      *common.json);
  };

  if (mpi) {
    run_on_ranks(*comm, key, task, [&] {
      read_sources();
      return fit();
    }, finish);
    return cli::kExitOk;
  }
  read_sources();
  if (!o.merge.empty()) {
    std::vector<std::vector<TensorPart>> all;
    for (const std::string& path : o.merge) all.push_back(part_read(path, key));
    finish(std::move(all));
  } else if (!o.partial.empty()) {
    const std::string text = part_json(key, task, fit()).dump() + "\n";
    write_text_file(o.partial, text);
    tool.summary(fmt::format("task {}/{}: realisations written to {}", task.index, task.count, o.partial));
  } else {
    finish({fit()});
  }
  return cli::kExitOk;
}

}  // namespace tk::tdecomp
