#include <filesystem>
#include <map>

#include "cli/provenance.h"
#include "results.h"
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
                             const std::vector<Result>& results, const std::function<Tensor(size_t)>& read_input) {
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
    const quant::Quantized& q = it->second->measured.q;
    records[e.info.name] = quant::layout_record(q, e.info.dtype);
    for (const auto& [suffix, part] : q.parts) {
      infos.push_back({quant::layout_part_name(e.info.name, suffix), part.dtype(), part.shape(), part.nbytes()});
      slots.push_back({e.index, it->second, suffix});
    }
  }
  io::Metadata metadata = input_metadata;
  std::optional<std::string> previous;
  if (auto tk = metadata.find(cli::kTkMetadataKey); tk != metadata.end()) previous = tk->second;
  metadata[cli::kTkMetadataKey] = quant::layout_metadata_merge(previous, records);
  cli::provenance_add(metadata, tool.provenance());

  io::WriteOptions options;
  options.format = format;
  auto writer = io::open_writer(args.output, options);
  WriteOutcome outcome;
  for (size_t k : writer->begin(infos, metadata)) {
    const OutputSlot& s = slots[k];
    writer->write(k, s.result ? s.result->measured.q.parts.at(s.suffix) : read_input(s.input_index));
    outcome.bytes += infos[k].nbytes;
  }
  writer->finish();
  outcome.sha256 = file_sha256(args.output);
  if (outcome.sha256) outcome.bytes = std::filesystem::file_size(args.output);
  return outcome;
}

}  // namespace tk::tquant
