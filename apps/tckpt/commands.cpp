// tckpt save / ls / restore / verify / gc / flush.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/directory_listing.h"
#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tckpt.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/core/background.h"
#include "tk/core/buffer.h"
#include "tk/core/error.h"
#include "tk/io/tensor_file.h"

namespace tk::tckpt {

namespace {

using nlohmann::json;

ckpt::Options engine_options(const EngineFlags& e) {
  ckpt::Options o;
  o.durable_dir = e.durable;
  o.keep_last = e.keep_last;
  o.keep_every = e.keep_every;
  o.compression = e.compress == "lossless" ? ckpt::Compression::kLossless : ckpt::Compression::kNone;
  o.incremental = e.incremental;
  o.full_every = e.full_every;
  if (!e.shard_size.empty()) o.shard_bytes = cli::bytes_parse(e.shard_size, "--shard-size");
  return o;
}

std::unique_ptr<ckpt::Checkpointer> open_read_only(const std::string& dir) {
  ckpt::Options o;
  o.read_only = true;
  return ckpt::Checkpointer::open(dir, o);
}

uint64_t chosen_step(const ckpt::Checkpointer& ck, const std::optional<uint64_t>& step) {
  if (step) return *step;
  auto latest = ck.latest();
  if (!latest) throw invalid_input("no committed step", ck.dir());
  return *latest;
}

}  // namespace

int run_save(cli::Tool& tool, const SaveOptions& o) {
  std::vector<std::string> inputs = o.inputs.empty() ? std::vector<std::string>{"-"} : o.inputs;
  if (std::count(inputs.begin(), inputs.end(), "-") > 1) throw usage_error("standard input can be read only once");
  cli::check_binary_input(inputs, cli::stdin_is_terminal());
  ckpt::Metadata metadata;
  std::vector<std::pair<std::string, std::string>> extra;
  for (const auto& kv : o.metadata) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw usage_error("expected KEY=VALUE, got '" + kv + "'", "--metadata");
    extra.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  ckpt::Options options = engine_options(o.engine);

  // Read everything first: a bad input must not cost a step.
  cli::TensorSelection selection = tool.options().selection();
  std::vector<ckpt::NamedTensor> tensors;
  std::set<std::string> names;
  for (const auto& path : inputs) {
    auto reader = cli::open_reader(tool, path);
    for (size_t i = 0; i < reader->tensors().size(); ++i) {
      const auto& info = reader->tensors()[i];
      if (!selection.selects(info.name)) continue;
      if (!names.insert(info.name).second)
        throw usage_error("tensor '" + info.name + "' appears in more than one input", cli::input_display_name(path));
      tensors.push_back({info.name, reader->read(i)});
    }
    metadata.insert(reader->metadata().begin(), reader->metadata().end());
  }
  selection.check_all_patterns_used();
  for (auto& [k, v] : extra) metadata[k] = v;

  auto ck = ckpt::Checkpointer::open(o.dir, options);
  uint64_t step = o.step ? *o.step : (ck->latest() ? *ck->latest() + 1 : 0);
  ckpt::SaveStats s = ck->save(step, std::move(tensors), metadata);
  ck->wait_all();  // the durable copy too, when there is a tier
  double seconds = s.write_seconds + s.commit_seconds;
  std::string parts = fmt::format("{} stored", s.tensors_stored);
  if (o.engine.incremental) parts += fmt::format(", {} unchanged, {} as deltas", s.tensors_referenced, s.tensors_delta);
  tool.summary(fmt::format("step {} committed: {}, {} ({}), wrote {} in {:.2f} s{}", step,
                           cli::count_noun(s.tensors_stored + s.tensors_referenced + s.tensors_delta, "tensor", "tensors"),
                           cli::format_bytes(s.logical_bytes), parts, cli::format_bytes(s.written_bytes), seconds,
                           o.engine.durable.empty() ? "" : ", flushed to " + o.engine.durable));
  if (tool.options().json) {
    json doc = {{"dir", o.dir},
                {"step", step},
                {"tensors_stored", s.tensors_stored},
                {"tensors_referenced", s.tensors_referenced},
                {"tensors_delta", s.tensors_delta},
                {"logical_bytes", s.logical_bytes},
                {"written_bytes", s.written_bytes},
                {"write_seconds", s.write_seconds},
                {"commit_seconds", s.commit_seconds}};
    cli::write_json(doc, *tool.options().json);
  }
  return cli::kExitOk;
}

// A step whose manifest cannot be read is listed as "invalid" with the others, and
// the listing then fails with that error (exit 3).
int run_ls(cli::Tool& tool, const StepOptions& o) {
  auto ck = open_read_only(o.dir);
  std::vector<ckpt::StepListing> steps = ck->list_each();
  std::set<uint64_t> durable;
  // The durable tier named, else the one the writer recorded: a recorded tier that cannot
  // be read (another node's path, gone since) is a warning, the listing goes on.
  std::string durable_dir = o.durable;
  const bool recorded = durable_dir.empty();
  if (recorded) durable_dir = ckpt::recorded_durable_dir(o.dir).value_or("");
  if (!durable_dir.empty()) {
    try {
      auto tier = open_read_only(durable_dir);
      for (uint64_t s : tier->steps()) durable.insert(s);
      tool.summary(fmt::format("durable tier {}: {} of {} steps flushed", durable_dir, durable.size(), steps.size()));
    } catch (const Error& e) {
      if (!recorded) throw;
      tool.warning(fmt::format("the recorded durable tier cannot be read: {} ({})", e.message(), e.where()));
      durable_dir.clear();
    }
  }
  std::vector<Error> invalid;
  cli::DirectoryTable listed = cli::step_table(steps, durable, invalid);
  if (tool.options().text_report()) cli::write_stdout(listed.table.render());
  if (tool.options().json) {
    json doc = {{"dir", o.dir}, {"steps", listed.rows}};
    doc["durable"] = durable_dir.empty() ? json(nullptr) : json(durable_dir);
    cli::write_json(doc, *tool.options().json);
  }
  cli::throw_invalid_steps(invalid);
  return cli::kExitOk;
}

int run_restore(cli::Tool& tool, const StepOptions& o) {
  io::FileFormat format = cli::output_format(o.output, o.format);
  tool.check_output(o.output);
  auto ck = open_read_only(o.dir);
  uint64_t step = chosen_step(*ck, o.step);
  ckpt::StepInfo info = ck->info(step);

  cli::TensorSelection selection = tool.options().selection();
  std::vector<io::TensorInfo> infos;
  for (const auto& e : info.entries) {
    if (!selection.selects(e.name)) continue;
    infos.push_back({e.name, e.dtype, e.shape, e.nbytes});
  }
  selection.check_all_patterns_used();

  // Tensor by tensor, in the writer's order, a piece at a time where the format takes
  // pieces: memory is a piece, not the step. The output is published only when every
  // checksum has passed (to stdout, bytes flow before the last check).
  io::WriteOptions write_options;
  write_options.format = format;
  auto writer = cli::open_writer(o.output, write_options);
  io::Metadata metadata(info.metadata.begin(), info.metadata.end());
  cli::metadata_edit(metadata, tool.output_options());
  std::vector<size_t> order = writer->begin(infos, metadata);
  std::vector<std::string> names;
  for (size_t i : order) names.push_back(infos[i].name);
  uint64_t bytes = 0;
  std::optional<io::TensorPieces> pieces;
  // The pieces are written on a thread of their own, so that the copy into the output
  // overlaps reading and checking the next ones; a tensor's start and end wait for the
  // writer, which then holds no piece.
  constexpr size_t kPendingWrite = size_t{4} << 20;
  BufferPool pool(2 * kPendingWrite);
  BackgroundQueue written([&](const Buffer& piece) { pieces->write({piece.data(), piece.size()}); }, kPendingWrite);
  ckpt::Checkpointer::RestoreSink sink;
  sink.begin = [&](size_t k) {
    written.wait();
    pieces.emplace(*writer, order[k], infos[order[k]]);
  };
  sink.piece = [&](std::span<const uint8_t> piece) {
    Buffer copy = pool.take(piece.size());
    std::memcpy(copy.mutable_data(), piece.data(), piece.size());
    written.push(std::move(copy));
    bytes += piece.size();
  };
  sink.end = [&](size_t) {
    written.wait();
    pieces->finish();
  };
  ck->restore_stream(step, names, sink);
  written.finish();
  writer->finish();
  const size_t restored = infos.size();
  tool.summary(fmt::format("step {}: {}, {} restored and verified", step,
                           cli::count_noun(restored, "tensor", "tensors"), cli::format_bytes(bytes)));
  if (tool.options().json)
    cli::write_json({{"dir", o.dir}, {"step", step}, {"output", o.output}, {"tensors", restored}, {"bytes", bytes}},
                    *tool.options().json);
  return cli::kExitOk;
}

int run_verify(cli::Tool& tool, const StepOptions& o) {
  auto ck = open_read_only(o.dir);
  std::vector<uint64_t> steps = o.step ? std::vector<uint64_t>{*o.step} : ck->steps();
  cli::TextTable table({"STEP", "RESULT", "TENSORS", "SIZE"});
  json rows = json::array();
  std::vector<std::string> problems;
  for (uint64_t s : steps) {
    ckpt::VerifyReport r = ck->verify(s);
    table.add_row({std::to_string(s), r.ok() ? "ok" : "FAILED", std::to_string(r.tensors_checked),
                   cli::format_bytes(r.bytes_checked)});
    rows.push_back({{"step", s}, {"ok", r.ok()}, {"tensors", r.tensors_checked}, {"bytes", r.bytes_checked},
                    {"problems", r.problems}});
    problems.insert(problems.end(), r.problems.begin(), r.problems.end());
  }
  if (tool.options().text_report()) cli::write_stdout(table.render());
  if (tool.options().json) cli::write_json({{"dir", o.dir}, {"steps", rows}}, *tool.options().json);
  if (problems.empty()) {
    tool.summary(fmt::format("{} verified", cli::count_noun(steps.size(), "step", "steps")));
    return cli::kExitOk;
  }
  // One error, one line (docs/ARCHITECTURE.md, "CLI contract"), however many findings one damaged file causes: the
  // first problem and a count of the others, which -v lists one line each and --json
  // carries in full.
  for (size_t i = 1; i < problems.size(); ++i) tool.verbose(1, "also: " + problems[i]);
  throw invalid_input(problems.front() + (problems.size() > 1 ? fmt::format(" (and {} more {}; -v or --json lists them)",
                                                                            problems.size() - 1,
                                                                            problems.size() > 2 ? "problems" : "problem")
                                                              : ""));
}

int run_gc(cli::Tool& tool, const GcOptions& o) {
  if (!std::filesystem::exists(o.dir)) throw errno_error("no such checkpoint directory", o.dir, ENOENT);
  auto ck = ckpt::Checkpointer::open(o.dir, engine_options(o.engine));
  ckpt::GcReport r = ck->gc();
  std::sort(r.removed_steps.begin(), r.removed_steps.end());
  std::vector<std::string> removed;
  for (uint64_t s : r.removed_steps) removed.push_back(std::to_string(s));
  tool.summary(fmt::format("removed {}{}, {} freed; removed {}",
                           cli::count_noun(removed.size(), "step", "steps"),
                           removed.empty() ? "" : " (" + fmt::format("{}", fmt::join(removed, ", ")) + ")",
                           cli::format_bytes(r.bytes_freed),
                           cli::count_noun(r.removed_temp_dirs, "leftover temp entry", "leftover temp entries")));
  if (tool.options().json)
    cli::write_json({{"dir", o.dir},
                     {"removed_steps", r.removed_steps},
                     {"bytes_freed", r.bytes_freed},
                     {"removed_temp_entries", r.removed_temp_dirs}},
                    *tool.options().json);
  return cli::kExitOk;
}

int run_flush(cli::Tool& tool, const FlushOptions& o) {
  std::vector<uint64_t> copied = ckpt::flush_steps(o.dir, o.to);
  std::vector<std::string> names;
  for (uint64_t s : copied) names.push_back(std::to_string(s));
  tool.summary(fmt::format("copied {}{} to {}", cli::count_noun(copied.size(), "step", "steps"),
                           names.empty() ? "" : " (" + fmt::format("{}", fmt::join(names, ", ")) + ")", o.to));
  if (tool.options().json) cli::write_json({{"from", o.dir}, {"to", o.to}, {"copied", copied}}, *tool.options().json);
  return cli::kExitOk;
}

}  // namespace tk::tckpt
