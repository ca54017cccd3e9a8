// `tinfo diff A B`: compare two files tensor by tensor, like cmp for tensors.
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tinfo.h"
#include "tk/core/error.h"
#include "tk/core/stats.h"
#include "tk/io/tensor_file.h"

namespace tk::tinfo {

namespace {

using nlohmann::json;

// Reads tensors of one file in any order the caller asks for. Random-access readers
// read directly; a sequential reader (a pipe) is read ahead, and the tensors passed over
// that will be asked for later are held until then.
class TensorSource {
 public:
  TensorSource(io::TensorReader& reader, std::set<size_t> wanted) : reader_(reader), wanted_(std::move(wanted)) {}

  Tensor take(size_t index) {
    if (reader_.random_access()) return reader_.read(index);
    if (auto it = held_.find(index); it != held_.end()) {
      Tensor t = std::move(it->second);
      held_.erase(it);
      return t;
    }
    while (next_ < index) {
      if (wanted_.count(next_)) held_.emplace(next_, reader_.read(next_));
      ++next_;
    }
    ++next_;
    return reader_.read(index);
  }

 private:
  io::TensorReader& reader_;
  std::set<size_t> wanted_;
  std::map<size_t, Tensor> held_;
  size_t next_ = 0;
};

enum class Status { kEqual, kClose, kDiffer, kShape, kOnlyA, kOnlyB };

struct Row {
  std::string name;
  Status status = Status::kEqual;
  const io::TensorInfo* a = nullptr;
  const io::TensorInfo* b = nullptr;
  TensorDiff diff;
};

// Close: no NaN/Inf mismatch and within every bound given; with none, equal values in
// other bits (another dtype, -0 against 0), which pass only when a bound is given.
Status classify(const TensorDiff& d, const DiffOptions& o) {
  if (d.bit_equal) return Status::kEqual;
  if (d.nan_mismatches != 0) return Status::kDiffer;
  const double abs_bound = o.tolerance.value_or(o.rtol ? std::numeric_limits<double>::infinity() : 0.0);
  const bool within = d.max_abs_error <= abs_bound && (!o.rtol || d.rel_error <= *o.rtol);
  return within ? Status::kClose : Status::kDiffer;
}

std::string status_text(const Row& r) {
  switch (r.status) {
    case Status::kEqual: return "equal";
    case Status::kClose: return "close";
    case Status::kDiffer: return "differ";
    case Status::kShape: return "shape " + shape_to_string(r.a->shape) + " vs " + shape_to_string(r.b->shape);
    case Status::kOnlyA: return "only in A";
    case Status::kOnlyB: return "only in B";
  }
  return "?";
}

const char* status_key(Status s) {
  switch (s) {
    case Status::kEqual: return "equal";
    case Status::kClose: return "close";
    case Status::kDiffer: return "differ";
    case Status::kShape: return "shape";
    case Status::kOnlyA: return "only_in_a";
    case Status::kOnlyB: return "only_in_b";
  }
  return "?";
}

std::string dtype_text(const Row& r) {
  if (r.a && r.b && r.a->dtype != r.b->dtype)
    return std::string(dtype_name(r.a->dtype)) + "/" + dtype_name(r.b->dtype);
  return dtype_name((r.a ? r.a : r.b)->dtype);
}

bool compared(const Row& r) { return r.status == Status::kEqual || r.status == Status::kClose || r.status == Status::kDiffer; }

json row_json(const Row& r) {
  json j = {{"name", r.name}, {"status", status_key(r.status)}};
  j["dtype_a"] = r.a ? json(dtype_name(r.a->dtype)) : json(nullptr);
  j["dtype_b"] = r.b ? json(dtype_name(r.b->dtype)) : json(nullptr);
  j["shape_a"] = r.a ? json(r.a->shape) : json(nullptr);
  j["shape_b"] = r.b ? json(r.b->shape) : json(nullptr);
  if (compared(r)) {
    j["mismatches"] = r.diff.mismatches;
    j["max_abs_err"] = cli::json_number(r.diff.max_abs_error);
    j["rel_err"] = cli::json_number(r.diff.rel_error);
    j["sqnr_db"] = cli::json_number(r.diff.sqnr_db);
  }
  return j;
}

}  // namespace

int run_diff(cli::Tool& tool, const DiffOptions& options) {
  const cli::CommonOptions& common = tool.options();
  cli::check_binary_input({options.a, options.b}, cli::stdin_is_terminal());
  if (cli::is_std_stream(options.a) && cli::is_std_stream(options.b))
    throw usage_error("standard input can be read only once");
  // Quantized files are compared as the tensors they stand for (dequantized).
  auto reader_a = open_shown(tool, options.a, options.parts);
  auto reader_b = open_shown(tool, options.b, options.parts);
  const auto& infos_a = reader_a->tensors();
  const auto& infos_b = reader_b->tensors();
  cli::TensorSelection selection = common.selection();

  // Rows in A's order, then B's extra tensors in B's order.
  std::vector<Row> rows;
  std::vector<std::pair<size_t, size_t>> pairs;  // (row, index in B) of tensors in both
  std::set<size_t> wanted_a, wanted_b;
  for (size_t i = 0; i < infos_a.size(); ++i) {
    if (!selection.selects(infos_a[i].name)) continue;
    Row r{infos_a[i].name, Status::kOnlyA, &infos_a[i], nullptr, {}};
    if (auto j = reader_b->find(infos_a[i].name)) {
      r.b = &infos_b[*j];
      if (r.a->shape != r.b->shape) {
        r.status = Status::kShape;
      } else {
        pairs.emplace_back(rows.size(), *j);
        wanted_a.insert(i);
        wanted_b.insert(*j);
      }
    }
    rows.push_back(r);
  }
  for (size_t j = 0; j < infos_b.size(); ++j)
    if (!reader_a->find(infos_b[j].name) && selection.selects(infos_b[j].name))
      rows.push_back({infos_b[j].name, Status::kOnlyB, nullptr, &infos_b[j], {}});
  selection.check_all_patterns_used();

  TensorSource source_a(*reader_a, wanted_a), source_b(*reader_b, wanted_b);
  for (auto [row, j] : pairs) {
    Row& r = rows[row];
    Tensor a = source_a.take(static_cast<size_t>(r.a - infos_a.data()));
    Tensor b = source_b.take(j);
    r.diff = tensor_diff(a, b);
    r.status = classify(r.diff, options);
  }

  std::map<Status, uint64_t> counts;
  for (const Row& r : rows) ++counts[r.status];
  uint64_t differ = counts[Status::kDiffer] + counts[Status::kShape];
  bool pass = differ == 0 && counts[Status::kOnlyA] == 0 && counts[Status::kOnlyB] == 0 &&
              (counts[Status::kClose] == 0 || options.tolerance.has_value() || options.rtol.has_value());

  const std::string counts_text = fmt::format("{} equal, {} close, {} differ, {} only in A, {} only in B",
                                              counts[Status::kEqual], counts[Status::kClose], differ,
                                              counts[Status::kOnlyA], counts[Status::kOnlyB]);
  if (common.text_report() && common.quiet) {
    // As diff -q: one line when the files differ, nothing when they match.
    if (!pass) cli::write_stdout(fmt::format("{} and {} differ: {}\n", options.a, options.b, counts_text));
  } else if (common.text_report()) {
    cli::TextTable table({"name", "status", "dtype", "max_abs_err", "rel_err", "sqnr_db"});
    for (const Row& r : rows) {
      if (compared(r))
        table.add_row({r.name, status_text(r), dtype_text(r), cli::format_number(r.diff.max_abs_error),
                       cli::format_number(r.diff.rel_error), cli::format_number(r.diff.sqnr_db)});
      else
        table.add_row({r.name, status_text(r), dtype_text(r), "-", "-", "-"});
    }
    cli::write_stdout(table.render());
    cli::write_stdout(counts_text + "\n");
  }
  if (common.json) {
    json tensors = json::array();
    for (const Row& r : rows) tensors.push_back(row_json(r));
    json summary = {{"equal", counts[Status::kEqual]}, {"close", counts[Status::kClose]},
                    {"differ", differ},                {"only_in_a", counts[Status::kOnlyA]},
                    {"only_in_b", counts[Status::kOnlyB]}};
    json doc = {{"a", options.a}, {"b", options.b}, {"tensors", std::move(tensors)}, {"summary", std::move(summary)},
                {"match", pass}};
    doc["tolerance"] = options.tolerance ? json(*options.tolerance) : json(nullptr);
    doc["rtol"] = options.rtol ? json(*options.rtol) : json(nullptr);
    cli::write_json(doc, *common.json);
  }
  return pass ? cli::kExitOk : cli::kExitFailure;
}

}  // namespace tk::tinfo
