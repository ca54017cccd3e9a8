#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "cli/progress.h"
#include "cli/provenance.h"
#include "results.h"
#include "spill.h"
#include "tk/codec/sha256.h"
#include "tk/quant/layout.h"

namespace tk::tquant {

namespace {

// What goes into output tensor k: an input tensor, or a part of a result.
struct OutputSlot {
  size_t input_index = 0;
  const Result* result = nullptr;
  std::string suffix;
};

std::optional<std::string> file_sha256(const std::string& path) {
  std::error_code ec;
  if (path == "-" || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  Buffer bytes = Buffer::map_file(path);
  return codec::sha256_hex(codec::sha256({bytes.data(), bytes.size()}));
}

}  // namespace

WriteOutcome write_quantized(const cli::Tool& tool, const QuantArgs& args, io::FileFormat format,
                             const io::Metadata& input_metadata, const std::vector<PlanEntry>& plan,
                             const std::vector<Result>& results, const InputAccess& input) {
  std::map<const PlanEntry*, const Result*> by_entry;
  for (const Result& r : results) by_entry[r.entry] = &r;

  std::vector<io::TensorInfo> infos;
  std::vector<OutputSlot> slots;
  std::map<std::string, quant::LayoutRecord> records;
  for (const PlanEntry& e : plan) {
    auto it = by_entry.find(&e);
    if (it == by_entry.end()) {
      infos.push_back(e.info);
      slots.push_back({e.index, nullptr, {}});
      continue;
    }
    const quant::Measured& m = it->second->measured;
    quant::LayoutRecord record = quant::layout_record(m.q, e.info.dtype);
    record.parts.clear();
    for (const auto& [suffix, part] : m.part_infos) {
      const auto& [dtype, shape] = part;
      infos.push_back({quant::layout_part_name(e.info.name, suffix), dtype, shape,
                       dtype_storage_bytes(dtype, shape_numel(shape))});
      slots.push_back({e.index, it->second, suffix});
      record.parts.push_back(suffix);
    }
    records[e.info.name] = std::move(record);
  }
  io::Metadata metadata = input_metadata;
  std::optional<std::string> previous;
  if (auto tk = metadata.find(cli::kTkMetadataKey); tk != metadata.end()) previous = tk->second;
  metadata[cli::kTkMetadataKey] = quant::layout_metadata_merge(previous, records);
  tool.stamp(metadata);

  io::WriteOptions options;
  options.format = format;
  auto writer = io::open_writer(args.output, options);
  WriteOutcome outcome;
  uint64_t total = 0;
  for (const io::TensorInfo& info : infos) total += info.nbytes;
  cli::Progress progress(tool.options().show_progress, tool.name());
  cli::WorkMeter meter(total);
  size_t written = 0;
  for (size_t k : writer->begin(infos, metadata)) {
    const OutputSlot& s = slots[k];
    progress.show(fmt::format("writing {}/{} tensors, {}", ++written, infos.size(), meter.text("bytes")));
    meter.add(infos[k].nbytes);
    if (!s.result) {
      writer->write(k, input.read(s.input_index));
      input.release(s.input_index);
    } else if (!s.result->measured.q.parts.empty()) {
      writer->write(k, s.result->measured.q.parts.at(s.suffix));
    } else {
      const auto& [dtype, shape] = s.result->measured.part_infos.at(s.suffix);
      writer->write(k, input.spill->read(s.result->spilled.at(s.suffix), dtype, shape));
    }
    outcome.bytes += infos[k].nbytes;
  }
  writer->finish();
  outcome.sha256 = file_sha256(args.output);
  if (outcome.sha256) outcome.bytes = std::filesystem::file_size(args.output);
  return outcome;
}

}  // namespace tk::tquant
