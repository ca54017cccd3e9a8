// `tinfo [FILE...]`: a header line and a table per file, or one JSON document.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/directory_listing.h"
#include "cli/input.h"
#include "cli/display_text.h"
#include "cli/metadata_text.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "stats_pass.h"
#include "tinfo.h"
#include "tk/codec/tkz_reader.h"
#include "tk/io/gguf.h"
#include "tk/io/tensor_file.h"
#include "tk/quant/dequant_reader.h"

namespace tk::tinfo {

namespace {

using nlohmann::json;

json stats_json(const TensorStats& s) {
  return {{"count", s.count},   {"finite", s.finite},
          {"zeros", s.zeros},   {"nan", s.nans},
          {"inf", s.infs},      {"min", cli::json_number(s.min)},
          {"max", cli::json_number(s.max)},  {"mean", cli::json_number(s.mean)},
          {"std", cli::json_number(s.std)},  {"absmax", cli::json_number(s.absmax)}};
}

std::vector<std::string> stats_cells(const TensorStats& s) {
  return {cli::format_number(s.min),  cli::format_number(s.max),    cli::format_number(s.mean),
          cli::format_number(s.std),  cli::format_number(s.absmax), std::to_string(s.zeros),
          std::to_string(s.nans),     std::to_string(s.infs)};
}

// Original bytes over stored bytes (0 when nothing is stored).
double stored_ratio(uint64_t bytes, uint64_t stored) {
  return stored == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(stored);
}

// The JSON object is built only when `with_json`: for a header of 10^6 tensors it costs
// more than reading the header.
Listing list_file(const cli::Tool& tool, const std::string& path, const ListOptions& options,
                  cli::TensorSelection& selection, bool with_json) {
  auto reader = open_shown(tool, path, options.parts);
  const auto& infos = reader->tensors();
  std::vector<size_t> selected;
  uint64_t bytes = 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (!selection.selects(infos[i].name)) continue;
    selected.push_back(i);
    bytes += infos[i].nbytes;
  }
  std::vector<TensorStats> stats;
  if (options.stats) stats = stats_pass(*reader, selected);

  // A container also shows how each tensor is stored.
  const auto* tkz = dynamic_cast<const codec::TkzReader*>(reader.get());
  // A quantized file shows each tensor's scheme and the bytes its parts take.
  const auto* quantized = dynamic_cast<const quant::DequantReader*>(reader.get());
  // A GGUF file shows each tensor's ggml type (block types are read decoded to F32).
  const auto* gguf = dynamic_cast<const io::GgufReader*>(reader.get());
  std::vector<std::string> header = {"name", "dtype", "shape", "bytes"};
  if (gguf)
    for (const char* c : {"type", "stored", "bits/value"}) header.push_back(c);
  if (tkz)
    for (const char* c : {"codec", "stored", "ratio"}) header.push_back(c);
  if (quantized)
    for (const char* c : {"scheme", "stored", "bits/value"}) header.push_back(c);
  uint64_t stored_total = 0, values = 0;
  if (options.stats)
    for (const char* c : {"min", "max", "mean", "std", "absmax", "zeros", "nan", "inf"}) header.push_back(c);
  cli::TextTable table(header);
  json tensors = json::array();
  for (size_t k = 0; k < selected.size(); ++k) {
    const io::TensorInfo& info = infos[selected[k]];
    std::vector<std::string> row = {info.name, dtype_name(info.dtype), shape_to_string(info.shape),
                                    std::to_string(info.nbytes)};
    if (tkz) {
      const codec::TkzEntry& e = tkz->entry(selected[k]);
      row.insert(row.end(), {codec::tkz_codec_name(e.codec), std::to_string(e.stored),
                             fmt::format("{:.3f}", stored_ratio(e.bytes, e.stored))});
    }
    if (quantized) {
      const quant::LayoutRecord* r = quantized->record(selected[k]);
      const uint64_t stored = quantized->stored_bytes(selected[k]);
      const uint64_t n = shape_numel(info.shape);
      stored_total += stored;
      values += n;
      row.insert(row.end(), {r ? r->scheme : "-", std::to_string(stored),
                             n == 0 ? "-" : fmt::format("{:.3f}", 8.0 * static_cast<double>(stored) / n)});
    }
    if (gguf) {
      const io::GgufTensor& e = gguf->entry(selected[k]);
      const uint64_t n = shape_numel(info.shape);
      stored_total += e.nbytes;
      values += n;
      row.insert(row.end(), {io::ggml_traits(e.type).name, std::to_string(e.nbytes),
                             n == 0 ? "-" : fmt::format("{:.3f}", 8.0 * static_cast<double>(e.nbytes) / n)});
    }
    if (options.stats) {
      auto cells = stats_cells(stats[k]);
      row.insert(row.end(), cells.begin(), cells.end());
    }
    table.add_row(std::move(row));
    if (!with_json) continue;
    json t = {{"name", info.name}, {"dtype", dtype_name(info.dtype)}, {"shape", info.shape}, {"bytes", info.nbytes}};
    if (tkz) {
      const codec::TkzEntry& e = tkz->entry(selected[k]);
      t.update({{"codec", codec::tkz_codec_name(e.codec)}, {"stored", e.stored}});
    }
    if (quantized) {
      const quant::LayoutRecord* r = quantized->record(selected[k]);
      t.update({{"scheme", r ? json(r->scheme) : json(nullptr)}, {"stored", quantized->stored_bytes(selected[k])}});
      if (r && !r->params.empty()) t["params"] = r->params;
    }
    if (gguf) {
      const io::GgufTensor& e = gguf->entry(selected[k]);
      t.update({{"ggml_type", io::ggml_traits(e.type).name}, {"stored", e.nbytes}});
    }
    if (options.stats) t["stats"] = stats_json(stats[k]);
    tensors.push_back(std::move(t));
  }

  std::string display = cli::escape_text(cli::input_display_name(path));
  std::string count = selected.size() == infos.size()
                          ? cli::count_noun(infos.size(), "tensor", "tensors")
                          : fmt::format("{} of {}", selected.size(), cli::count_noun(infos.size(), "tensor", "tensors"));
  Listing listing;
  listing.text = fmt::format("{}: {}, {}, {}\n", display, io::format_name(reader->format()), count,
                             cli::format_bytes(bytes));
  listing.text += table.render();
  if (tkz) {
    const codec::TkzListing& l = tkz->listing();
    listing.text += fmt::format("container: {} -> {}, ratio {:.3f}{}\n", cli::format_bytes(l.original_bytes),
                                cli::format_bytes(l.container_bytes),
                                stored_ratio(l.original_bytes, l.container_bytes),
                                l.has_base ? ", BitX deltas (restore with tcompress -d --base)" : "");
  }
  if (quantized) {
    listing.text += fmt::format("quantized: {} of {}, {} stored for {} ({:.3f} bits/value); --parts lists the stored "
                                "tensors\n",
                                quantized->quantized_count(), cli::count_noun(infos.size(), "tensor", "tensors"),
                                cli::format_bytes(stored_total), cli::format_bytes(bytes),
                                values == 0 ? 0.0 : 8.0 * static_cast<double>(stored_total) / static_cast<double>(values));
  }
  if (gguf) {
    listing.text += fmt::format("gguf: version {}, alignment {}, {} key-value pairs, {} stored ({:.3f} bits/value)\n",
                                gguf->version(), gguf->alignment(), gguf->kvs().size(), cli::format_bytes(stored_total),
                                values == 0 ? 0.0 : 8.0 * static_cast<double>(stored_total) / static_cast<double>(values));
  }
  if (options.metadata) {
    listing.text += reader->metadata().empty() ? "metadata: none\n" : "metadata:\n";
    listing.text += cli::metadata_lines(reader->metadata());
  }
  if (!with_json) return listing;
  json metadata = json::object();
  for (const auto& [key, value] : reader->metadata()) metadata[key] = value;
  listing.doc = {{"path", path}, {"format", io::format_name(reader->format())}, {"bytes", bytes},
                 {"tensors", std::move(tensors)}, {"metadata", std::move(metadata)}};
  if (tkz) {
    listing.doc["original_bytes"] = tkz->listing().original_bytes;
    listing.doc["container_bytes"] = tkz->listing().container_bytes;
  }
  return listing;
}

}  // namespace

int run_list(cli::Tool& tool, const ListOptions& options) {
  const cli::CommonOptions& common = tool.options();
  cli::check_binary_input(options.files, cli::stdin_is_terminal());
  cli::TensorSelection selection = common.selection();
  std::vector<Listing> listings;
  for (const auto& path : options.files) {
    auto directory = list_directory(path, options, common.json.has_value());
    listings.push_back(directory ? std::move(*directory)
                                 : list_file(tool, path, options, selection, common.json.has_value()));
  }
  selection.check_all_patterns_used();

  if (common.text_report()) {
    for (size_t i = 0; i < listings.size(); ++i) cli::write_stdout((i ? "\n" : "") + listings[i].text);
  }
  if (common.json) {
    json files = json::array();
    for (auto& l : listings) files.push_back(std::move(l.doc));
    cli::write_json({{"files", std::move(files)}}, *common.json);
  }
  for (const auto& l : listings) cli::throw_invalid_steps(l.errors);
  return cli::kExitOk;
}

}  // namespace tk::tinfo
