#include "rank_parts.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "cli/path_args.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::tdecomp {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "tdecomp-rank-partial";
constexpr int kVersion = 1;
// Parts are at most this large: a file is refused before it is parsed beyond it.
constexpr uint64_t kMaxPartBytes = uint64_t{1} << 30;

json options_json(const SweepKey& key) {
  const auto& o = key.options;
  return {{"method", key.method},      {"min_rank", o.min_rank}, {"max_rank", o.max_rank},
          {"realisations", o.realisations}, {"noise", o.noise},  {"seed", o.seed},
          {"tol", o.tol},              {"max_iters", o.max_iters}};
}

// A finite double from `v`, or kInvalidInput.
double finite(const json& v, const char* what) {
  if (!v.is_number()) throw invalid_input(std::string("not a number: ") + what);
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw invalid_input(std::string("not finite: ") + what);
  return d;
}

std::vector<double> numbers(const json& v, const char* what) {
  if (!v.is_array()) throw invalid_input(std::string("not an array: ") + what);
  std::vector<double> out;
  out.reserve(v.size());
  for (const json& x : v) out.push_back(finite(x, what));
  return out;
}

// The first error of a run, as it travels from a rank to the others.
json error_json(const Error& e) {
  json j = {{"kind", static_cast<int>(e.kind())}, {"message", e.message()}, {"where", e.where()}};
  if (!e.option().empty()) j["option"] = e.option();
  return j;
}

Error error_from(const json& e) {
  return Error(static_cast<ErrorKind>(e.at("kind").get<int>()), e.at("message").get<std::string>(),
               e.at("where").get<std::string>())
      .with_option(e.value("option", std::string()));
}

// Collectives of a sweep wait as long as the slowest rank fits; a rank that died ends
// the job through the launcher.
dist::Clock::time_point far_deadline() { return dist::Clock::now() + std::chrono::hours(24 * 7); }

std::vector<uint8_t> bytes_of(const json& doc) {
  const std::string text = doc.dump();
  return {text.begin(), text.end()};
}

}  // namespace

Task task_parse(const std::string& text) {
  Task t;
  char slash = 0, tail = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &t.index, &slash, &t.count, &tail) != 3 || slash != '/' ||
      t.count < 1 || t.index < 0 || t.index >= t.count)
    throw usage_error("expected I/N with 0 <= I < N, got '" + text + "'", "--task");
  return t;
}

decomp::RealisationFilter task_filter(const Task& task, const decomp::RankSelectOptions& options) {
  if (task.count == 1) return {};
  const int first = options.min_rank, per_rank = options.realisations;
  return [task, first, per_rank](int rank, int index) {
    return ((rank - first) * per_rank + index) % task.count == task.index;
  };
}

json part_json(const SweepKey& key, const Task& task, const std::vector<TensorPart>& tensors) {
  json list = json::array();
  for (const TensorPart& t : tensors) {
    json reals = json::array();
    for (const decomp::Realisation& r : t.realisations)
      reals.push_back({{"rank", r.rank}, {"index", r.index}, {"rel_error", r.rel_error}, {"lambda", r.lambda},
                       {"modes", r.modes}});
    list.push_back({{"name", t.name}, {"shape", t.shape}, {"realisations", std::move(reals)}});
  }
  return {{"format", kFormat},
          {"version", kVersion},
          {"options", options_json(key)},
          {"task", {{"index", task.index}, {"count", task.count}}},
          {"tensors", std::move(list)}};
}

std::vector<TensorPart> part_parse(const json& doc, const SweepKey& key, const std::string& where) {
  try {
    if (!doc.is_object() || doc.value("format", "") != kFormat)
      throw invalid_input("not a tdecomp rank --partial file");
    if (doc.at("version") != kVersion)
      throw invalid_input(fmt::format("unsupported --partial version {}", doc.at("version").dump()));
    if (doc.at("options") != options_json(key))
      throw invalid_input("made with other options (method, --range, --realisations, --noise, --seed, --tol, "
                          "--max-iters) than this run's: " + doc.at("options").dump());
    std::vector<TensorPart> out;
    for (const json& t : doc.at("tensors")) {
      TensorPart part;
      part.name = t.at("name").get<std::string>();
      for (const json& d : t.at("shape")) {
        const double v = finite(d, "shape");
        if (v < 0 || v != std::floor(v) || v > 1e15) throw invalid_input("bad shape");
        part.shape.push_back(static_cast<int64_t>(v));
      }
      for (const json& r : t.at("realisations")) {
        decomp::Realisation real;
        real.rank = r.at("rank").get<int>();
        real.index = r.at("index").get<int>();
        real.rel_error = finite(r.at("rel_error"), "rel_error");
        real.lambda = numbers(r.at("lambda"), "lambda");
        if (!r.at("modes").is_array()) throw invalid_input("not an array: modes");
        for (const json& m : r.at("modes")) real.modes.push_back(numbers(m, "modes"));
        part.realisations.push_back(std::move(real));
      }
      out.push_back(std::move(part));
    }
    return out;
  } catch (const Error& e) {
    throw e.with_where(where);
  } catch (const json::exception& e) {
    throw invalid_input(std::string("malformed --partial file: ") + e.what(), where);
  }
}

std::vector<TensorPart> part_read(const std::string& path, const SweepKey& key) {
  const Buffer bytes =
      io::read_small_file(*cli::open_input(path), kMaxPartBytes, "larger than a --partial file can be");
  const json doc = json::parse(bytes.data(), bytes.data() + bytes.size(), nullptr, false);
  const std::string name = cli::input_display_name(path);
  if (doc.is_discarded()) throw invalid_input("not JSON (a tdecomp rank --partial file?)", name);
  return part_parse(doc, key, name);
}

void run_on_ranks(dist::Comm& comm, const SweepKey& key, const Task& task,
                  const std::function<std::vector<TensorPart>()>& fit,
                  const std::function<void(std::vector<std::vector<TensorPart>>)>& finish) {
  json mine;
  try {
    mine = {{"part", part_json(key, task, fit())}};
  } catch (const Error& e) {
    mine = {{"error", error_json(e)}};
  }
  std::vector<std::vector<uint8_t>> all = comm.gatherv(bytes_of(mine), far_deadline());
  json outcome = json::object();
  if (comm.rank() == 0) {
    try {
      std::vector<std::vector<TensorPart>> parts;
      for (size_t r = 0; r < all.size(); ++r) {
        const json doc = json::parse(all[r].begin(), all[r].end());
        if (doc.contains("error")) {
          outcome = doc;
          break;
        }
        parts.push_back(part_parse(doc.at("part"), key, fmt::format("MPI rank {}", r)));
      }
      if (outcome.empty()) finish(std::move(parts));
    } catch (const Error& e) {
      outcome = {{"error", error_json(e)}};
    }
  }
  // The outcome's length, then its bytes, from rank 0 to every rank.
  std::vector<uint8_t> text = bytes_of(outcome);
  uint64_t length = text.size();
  comm.broadcast({reinterpret_cast<uint8_t*>(&length), sizeof length}, far_deadline());
  text.resize(length);
  comm.broadcast(text, far_deadline());
  const json got = json::parse(text.begin(), text.end());
  if (got.contains("error")) throw error_from(got.at("error"));
}

}  // namespace tk::tdecomp
