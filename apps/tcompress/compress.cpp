// tcompress IN -o OUT.tkz: check the request, open the base, compress, report.
#include <algorithm>
#include <chrono>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tcompress.h"
#include "tk/codec/container.h"
#include "tk/codec/lossy.h"
#include "tk/codec/tkz_reader.h"
#include "tk/core/error.h"
#include "tk/device/device.h"
#include "tk/io/transfer.h"

namespace tk::tcompress {

namespace {

using nlohmann::json;

double ratio(uint64_t original, uint64_t stored) {
  return stored == 0 ? 0.0 : static_cast<double>(original) / static_cast<double>(stored);
}

double mb_per_s(uint64_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e6 : 0.0; }

json entries_json(const std::vector<codec::TkzEntry>& entries) {
  json out = json::array();
  for (const auto& e : entries) {
    json j = {{"name", e.name},
              {"kind", e.is_tensor ? "tensor" : "opaque"},
              {"codec", codec::tkz_codec_name(e.codec)},
              {"bytes", e.bytes},
              {"offset", e.offset},
              {"stored", e.stored}};
    if (e.is_tensor) {
      j["dtype"] = dtype_name(e.dtype);
      j["shape"] = e.shape;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// The lossy options the flags ask for, or nullopt for an exact mode. Checks that the
// rate is given once and that the codec is present here.
std::optional<codec::LossyOptions> lossy_options(const CompressOptions& o, const cli::CommonOptions& common) {
  const bool rate_flags = o.crf >= 0 || o.bits_per_value > 0 || o.no_rotate;
  if (o.video.empty() && o.lossy.empty()) {
    if (rate_flags) throw usage_error("--crf, --bits-per-value and --no-rotate need --video or --lossy");
    return std::nullopt;
  }
  if (!o.video.empty() && !o.lossy.empty()) throw usage_error("--video and --lossy exclude each other");
  codec::LossyOptions l;
  l.method = codec::lossy_method_parse(o.video.empty() ? o.lossy : o.video);
  if ((o.crf >= 0) == (o.bits_per_value > 0)) {
    throw usage_error(o.video.empty() ? "--lossy quant needs --bits-per-value B"
                                      : "--video needs one of --crf N and --bits-per-value B");
  }
  if (o.crf >= 0 && l.method == codec::LossyMethod::kQuant) throw usage_error("--crf applies to --video only");
  l.crf = o.crf;
  l.bits_per_value = o.bits_per_value;
  l.rotate = !o.no_rotate;
  l.seed = common.seed.value_or(0);
  l.threads = common.threads;
  std::string why;
  if (!codec::lossy_available(l.method, &why)) throw unavailable(why);
  // The GPU's hardware encoder codes video: on the device asked for, else (auto) on
  // device 0 when it opens there.
  const device::Request& asked = common.device;
  const bool video = l.method != codec::LossyMethod::kQuant;
  if (asked.kind == device::Request::Kind::kCuda) {
    const std::string where = "--device " + device::request_name(asked);
    if (!video) throw unavailable("--lossy quant has no GPU code path; --device cpu or auto runs it on the CPU", where);
    if (!codec::lossy_gpu_available(l.method, asked.index, &why)) throw unavailable(why, where);
    l.gpu = asked.index;
  } else if (asked.kind == device::Request::Kind::kAuto && video && device::cuda_device_count() > 0 &&
             codec::lossy_gpu_available(l.method, 0)) {
    l.gpu = 0;
  }
  return l;
}

// Lossy modes code the weight matrices: float tensors of rank 2 or more with at least
// 4096 values. Vectors (biases, norms) and small tensors stay exact: they cost little
// and errors in them hurt a model most.
bool lossy_applies(const io::TensorInfo& info) {
  const bool float_dtype = info.dtype == DType::kF32 || info.dtype == DType::kF16 || info.dtype == DType::kBF16 ||
                           info.dtype == DType::kF64;
  uint64_t n = 1;
  for (int64_t d : info.shape) n *= static_cast<uint64_t>(d);
  return float_dtype && info.shape.size() >= 2 && n >= 4096;
}

void check_no_compress_flags(const CompressOptions& o) {
  if (o.strict) throw usage_error("--strict applies only when compressing");
  if (o.container) throw usage_error("--container applies only when compressing");
  if (o.sha256) throw usage_error("--sha256 applies only when compressing; a restore checks the digest the container records");
  if (!o.video.empty() || !o.lossy.empty() || o.crf >= 0 || o.bits_per_value > 0 || o.no_rotate || o.min_sqnr >= 0)
    throw usage_error("lossy flags (--video, --lossy, --crf, --bits-per-value, --no-rotate, --min-sqnr) apply only "
                      "when compressing");
}

// How one tensor was coded in a lossy mode: what the report lists.
struct LossyTensor {
  std::string name;
  std::string method;  // the lossy method used, or "exact" after a fall back from quant
  bool fell_back = false;
  codec::LossyReport report;  // of the coding kept (zeros for exact)
};

// Code a tensor in the lossy mode asked, falling back under the --min-sqnr floor: video
// to quant at the bits per value the video frame reached, quant to exact (nullopt).
std::optional<std::vector<uint8_t>> lossy_with_floor(const io::TensorInfo& info, const Tensor& tensor,
                                                     const codec::LossyOptions& asked, double min_sqnr,
                                                     LossyTensor& done) {
  done.name = info.name;
  codec::LossyOptions options = asked;
  for (;;) {
    codec::LossyReport report;
    std::vector<uint8_t> frame = codec::lossy_encode(tensor, options, &report);
    done.method = codec::lossy_method_name(options.method);
    done.report = report;
    if (min_sqnr < 0 || report.sqnr_db >= min_sqnr) return frame;
    done.fell_back = true;
    if (options.method == codec::LossyMethod::kQuant) {
      done.method = "exact";
      done.report = {};
      return std::nullopt;
    }
    options.method = codec::LossyMethod::kQuant;
    options.crf = -1;
    options.bits_per_value = report.bits_per_value;
  }
}

json lossy_json(const std::vector<LossyTensor>& tensors) {
  json out = json::array();
  for (const LossyTensor& t : tensors) {
    out.push_back({{"name", t.name},
                   {"method", t.method},
                   {"fell_back", t.fell_back},
                   {"bits_per_value", cli::json_number(t.report.bits_per_value)},
                   {"sqnr_db", t.method == "exact" ? json(nullptr) : cli::json_number(t.report.sqnr_db)},
                   {"rel_rmse", cli::json_number(t.report.rel_rmse)},
                   {"max_abs_error", cli::json_number(t.report.max_abs_error)}});
  }
  return out;
}

// "SQNR 9.9 dB median, 1.3 min; 2 fell back below --min-sqnr 12" for the summary.
std::string lossy_summary(const std::vector<LossyTensor>& tensors, double min_sqnr) {
  std::vector<double> sqnr;
  size_t fell_back = 0;
  for (const LossyTensor& t : tensors) {
    if (t.method != "exact") sqnr.push_back(t.report.sqnr_db);
    fell_back += t.fell_back;
  }
  std::string text;
  if (!sqnr.empty()) {
    std::sort(sqnr.begin(), sqnr.end());
    const size_t n = sqnr.size();
    const double median = n % 2 ? sqnr[n / 2] : (sqnr[n / 2 - 1] + sqnr[n / 2]) / 2;
    text = fmt::format("; SQNR median {:.1f} dB, min {:.1f}", median, sqnr.front());
  }
  if (min_sqnr >= 0) text += fmt::format("; {} fell back below --min-sqnr {}", fell_back, min_sqnr);
  return text;
}

// What both directions check before reading anything: terminals, the output not a
// directory nor one of the inputs, stdout and stdin each used once.
void check_streams(const cli::Tool& tool, const CompressOptions& o, const cli::CommonOptions& common) {
  cli::check_binary_input({o.input}, cli::stdin_is_terminal());
  tool.check_output(o.output, {o.input, o.base});
  common.check_one_stdout(o.output);
  if (cli::is_std_stream(o.input) && cli::is_std_stream(o.base))
    throw usage_error("standard input can be read only once");
}

}  // namespace

void resolve_output(CompressOptions& o, bool extract) {
  if (o.list) return;  // run_list refuses -o and -c
  if (o.to_stdout) {
    if (!o.output.empty()) throw usage_error("-c writes to stdout; leave out -o");
    o.output = "-";
    return;
  }
  if (!o.output.empty()) return;
  constexpr std::string_view kSuffix = ".tkz";
  if (cli::is_std_stream(o.input) || extract) o.output = "-";
  else if (!o.decompress) o.output = o.input + std::string(kSuffix);
  else if (o.input.size() > kSuffix.size() && o.input.ends_with(kSuffix))
    o.output = o.input.substr(0, o.input.size() - kSuffix.size());
  else throw usage_error("the name does not end in .tkz; give -o FILE or -c", o.input);
}

int run_compress(cli::Tool& tool, const CompressOptions& o) {
  const cli::CommonOptions& common = tool.options();
  if (!common.tensors.empty() || !common.exclude.empty())
    throw usage_error("-t/--exclude select a tensor to extract with -d; a container keeps the whole file");
  if (!o.format.empty()) throw usage_error("--format applies to a tensor extracted with -d -t");
  check_streams(tool, o, common);
  std::optional<codec::LossyOptions> lossy = lossy_options(o, common);

  codec::TkzCompressOptions options;
  options.lossless.level = o.level;
  options.lossless.threads = common.threads;
  const uint64_t chunk = cli::bytes_parse(o.chunk, "--chunk");
  if (chunk < 4096 || chunk > (64u << 20)) throw usage_error("chunk size must be between 4KiB and 64MiB", "--chunk");
  options.lossless.chunk_bytes = static_cast<uint32_t>(chunk);
  options.refuse_damaged = o.strict;
  options.zstd_frame = !o.container;
  if (o.sha256) options.digest = codec::DigestKind::kSha256;
  std::unique_ptr<codec::BitxBase> base;
  if (!o.base.empty()) {
    base = codec::BitxBase::open(cli::open_input(o.base));
    options.base = base.get();
  }

  std::vector<LossyTensor> lossy_tensors;
  if (o.min_sqnr >= 0 && !lossy) throw usage_error("--min-sqnr applies with --video or --lossy");
  if (lossy) {
    if (base) throw usage_error("--base codes tensors exactly; it does not combine with lossy modes");
    // The container asks for one tensor at a time, in order.
    options.lossy = [&lossy, &lossy_tensors, &o](const io::TensorInfo& info,
                                                 const Tensor& tensor) -> std::optional<std::vector<uint8_t>> {
      if (!lossy_applies(info)) return std::nullopt;
      lossy_tensors.emplace_back();
      return lossy_with_floor(info, tensor, *lossy, o.min_sqnr, lossy_tensors.back());
    };
  }

  auto in = cli::open_input(o.input);
  auto out = cli::open_output(o.output);
  cli::Progress progress(common.show_progress, tool.name());
  options.progress = [&progress](uint64_t done, std::optional<uint64_t> total) {
    progress.show(total ? fmt::format("{} / {}", cli::format_bytes(done), cli::format_bytes(*total))
                        : cli::format_bytes(done));
  };
  const auto start = std::chrono::steady_clock::now();
  codec::TkzCompressResult r = codec::tkz_compress(*in, *out, options);
  if (!r.damage.empty()) tool.warning(fmt::format("{}: {}; kept as opaque bytes (--strict refuses it)", in->name(), r.damage));
  out->commit();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.clear();

  size_t tensors = 0, refs = 0, deltas = 0, lossy_count = 0;
  for (const auto& e : r.entries) {
    lossy_count += e.codec == codec::TkzCodec::kLossy;
    tensors += e.is_tensor;
    refs += e.codec == codec::TkzCodec::kBitxRef;
    deltas += e.codec == codec::TkzCodec::kBitxDelta;
  }
  const std::string kept = r.zstd_frame ? "one zstd frame" : "opaque bytes";
  std::string what = r.zstd_frame && r.source == io::FileFormat::kSafetensors
                         ? std::string("safetensors kept as one zstd frame (smaller than per-tensor records)")
                     : r.source == io::FileFormat::kSafetensors ? cli::count_noun(tensors, "tensor", "tensors")
                     : r.source == io::FileFormat::kUnknown
                         ? fmt::format("file kept as {} (no tensor format)", kept)
                         : fmt::format("{} kept as {}", io::format_name(r.source), kept);
  if (base)
    what += fmt::format(" ({} identical to the base, {})", refs, cli::count_noun(deltas, "delta", "deltas"));
  if (lossy)
    what += fmt::format(" ({} lossy, {}{}{})", lossy_count, codec::lossy_method_name(lossy->method),
                        lossy->gpu >= 0 ? fmt::format(" by {} on cuda:{}",
                                                      codec::lossy_encoder_name(lossy->method, lossy->gpu), lossy->gpu)
                                        : "",
                        lossy_summary(lossy_tensors, o.min_sqnr));
  tool.summary(fmt::format("{}, {} -> {}, ratio {:.3f}, {:.0f} MB/s", what, cli::format_bytes(r.bytes_in),
                           cli::format_bytes(r.bytes_out), ratio(r.bytes_in, r.bytes_out),
                           mb_per_s(r.bytes_in, seconds)));
  if (common.json) {
    json doc = {{"input", o.input},
                {"output", o.output},
                {"source", io::format_name(r.source)},
                {"zstd_frame", r.zstd_frame},
                {"bytes_in", r.bytes_in},
                {"bytes_out", r.bytes_out},
                {"ratio", cli::json_number(ratio(r.bytes_in, r.bytes_out))},
                {"seconds", seconds},
                {"mb_per_s", cli::json_number(mb_per_s(r.bytes_in, seconds))},
                {r.digest.name(), r.digest.hex()},
                {"records", entries_json(r.entries)}};
    if (base) doc["base"] = {{"path", o.base}, {"sha256", codec::sha256_hex(base->sha256())}};
    if (lossy) {
      doc["lossy"] = lossy_json(lossy_tensors);
      doc["lossy_encoder"] = codec::lossy_encoder_name(lossy->method, lossy->gpu);
      doc["lossy_device"] = lossy->gpu >= 0 ? "cuda:" + std::to_string(lossy->gpu) : "cpu";
    }
    cli::write_json(doc, *common.json);
  }
  return cli::kExitOk;
}

namespace {

// -d with globs, several -t or --exclude: the selected tensors into one tensor file, with
// the original file's metadata, decoded one at a time (memory: one tensor).
void extract_selected(cli::Tool& tool, const CompressOptions& o, const codec::TkzDecodeOptions& options,
                      io::FileFormat format, json& doc) {
  const auto start = std::chrono::steady_clock::now();
  auto reader = cli::open_seekable_reader(
      tool, o.input, [&](const std::string& path) { return std::make_unique<codec::TkzReader>(path, options); });
  cli::TensorSelection selection = tool.options().selection();
  std::vector<io::TransferItem> items;
  const auto& infos = reader->tensors();
  for (size_t i = 0; i < infos.size(); ++i)
    if (selection.selects(infos[i].name)) items.push_back({0, i, infos[i].name, std::nullopt});
  selection.check_all_patterns_used();
  if (items.empty()) throw usage_error("no tensor of the container is selected", cli::input_display_name(o.input));
  io::Metadata metadata = reader->metadata();
  tool.stamp(metadata);
  io::WriteOptions write_options;
  write_options.format = format;
  auto writer = cli::open_writer(o.output, write_options);
  const std::vector<io::TransferSource> sources = {{reader.get(), cli::input_display_name(o.input)}};
  const io::TransferResult r = io::transfer(sources, items, *writer, metadata);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  tool.summary(fmt::format("{}, {}, {} in {:.3f} s", cli::count_noun(r.tensors, "tensor", "tensors"),
                           cli::format_bytes(r.bytes_out), io::format_name(format), seconds));
  json names = json::array();
  for (const auto& item : items) names.push_back(item.output_name);
  doc.update({{"tensors", std::move(names)}, {"bytes", r.bytes_out}, {"format", io::format_name(format)},
              {"seconds", seconds}});
}

// One -t NAME without wildcards: extracted by streaming, also from a pipe.
bool extracts_one_name(const cli::CommonOptions& common) {
  return common.tensors.size() == 1 && common.exclude.empty() &&
         common.tensors[0].find_first_of("*?") == std::string::npos;
}

}  // namespace

int run_decompress(cli::Tool& tool, const CompressOptions& o) {
  const cli::CommonOptions& common = tool.options();
  check_no_compress_flags(o);
  const bool extract = !common.tensors.empty() || !common.exclude.empty();
  if (!o.format.empty() && !extract) throw usage_error("--format applies to a tensor extracted with -t");
  const io::FileFormat format = extract ? cli::output_format(o.output, o.format) : io::FileFormat::kUnknown;
  check_streams(tool, o, common);

  codec::TkzDecodeOptions options;
  options.threads = common.threads;
  std::unique_ptr<codec::BitxBase> base;
  if (!o.base.empty()) {
    base = codec::BitxBase::open(cli::open_input(o.base));
    options.base = base.get();
  }
  json doc = {{"input", o.input}, {"output", o.output}};
  if (extract && !extracts_one_name(common)) {
    extract_selected(tool, o, options, format, doc);
    if (common.json) cli::write_json(doc, *common.json);
    return cli::kExitOk;
  }
  auto in = cli::open_input(o.input);
  const auto start = std::chrono::steady_clock::now();
  if (extract) {
    // The tensor goes to the writer piece by piece (safetensors, .npy, HDF5), so memory
    // stays bounded by a chunk; a writer that takes a tensor whole (an HDF5 scalar) gets
    // it whole.
    io::WriteOptions write_options;
    write_options.format = format;
    std::unique_ptr<io::TensorWriter> writer;
    std::optional<io::TensorPieces> pieces;
    codec::TkzTensorSink sink;
    sink.begin = [&](const io::TensorInfo& info) {
      writer = cli::open_writer(o.output, write_options);
      io::Metadata metadata;
      tool.stamp(metadata);
      writer->begin({info}, metadata);
      pieces.emplace(*writer, 0, info);
    };
    sink.piece = [&](std::span<const uint8_t> piece) { pieces->write(piece); };
    const io::TensorInfo info = codec::tkz_extract_stream(*in, common.tensors[0], options, sink);
    pieces->finish();
    writer->finish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    tool.summary(fmt::format("tensor '{}' ({} {}), {} in {:.3f} s", info.name, dtype_name(info.dtype),
                             cli::format_bytes(info.nbytes), io::format_name(format), seconds));
    doc.update({{"tensor", info.name}, {"dtype", dtype_name(info.dtype)}, {"shape", info.shape},
                {"bytes", info.nbytes}, {"format", io::format_name(format)}, {"seconds", seconds}});
  } else {
    auto out = cli::open_output(o.output);
    codec::TkzDecompressResult r = codec::tkz_decompress(*in, *out, options);
    out->commit();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    tool.summary(fmt::format("{} -> {}, {}, {:.0f} MB/s", cli::format_bytes(r.bytes_in),
                             cli::format_bytes(r.bytes_out),
                             r.zstd_frame ? std::string("zstd frame checksum verified")
                             : r.exact    ? fmt::format("{} verified", r.digest.label())
                                     : std::string("lossy records decoded (approximate)"),
                             mb_per_s(r.bytes_out, seconds)));
    doc.update({{"bytes_in", r.bytes_in}, {"bytes_out", r.bytes_out}, {"exact", r.exact}, {"zstd_frame", r.zstd_frame},
                {r.digest.name(), r.digest.hex()}, {"seconds", seconds},
                {"mb_per_s", cli::json_number(mb_per_s(r.bytes_out, seconds))}});
  }
  if (common.json) cli::write_json(doc, *common.json);
  return cli::kExitOk;
}

int run_list(cli::Tool& tool, const CompressOptions& o) {
  const cli::CommonOptions& common = tool.options();
  check_no_compress_flags(o);
  if (!o.output.empty() || o.to_stdout) throw usage_error("-l writes its listing to stdout; -o and -c do not apply");
  cli::check_binary_input({o.input}, cli::stdin_is_terminal());
  auto in = cli::open_input(o.input);
  codec::TkzListing l = codec::tkz_list(*in);
  if (l.zstd_frame) {
    if (common.text_report())
      cli::write_stdout(fmt::format("file kept as one zstd frame: {} bytes -> {} bytes, ratio {:.3f}\n",
                                    l.original_bytes, l.container_bytes, ratio(l.original_bytes, l.container_bytes)));
    if (common.json)
      cli::write_json({{"input", o.input},
                       {"source", "file"},
                       {"zstd_frame", true},
                       {"original_bytes", l.original_bytes},
                       {"container_bytes", l.container_bytes},
                       {"ratio", cli::json_number(ratio(l.original_bytes, l.container_bytes))},
                       {l.digest.name(), l.digest.hex()},
                       {"records", json::array()}},
                      *common.json);
    return cli::kExitOk;
  }
  cli::TensorSelection selection = common.selection();
  std::vector<codec::TkzEntry> shown;
  for (const auto& e : l.entries)
    if (!e.is_tensor || selection.selects(e.name)) shown.push_back(e);
  if (common.text_report()) {
    cli::TextTable table({"name", "dtype", "shape", "codec", "bytes", "stored", "ratio"});
    for (const auto& e : shown) {
      std::string shape = e.is_tensor ? fmt::format("[{}]", fmt::join(e.shape, ", ")) : "-";
      table.add_row({e.is_tensor ? e.name : "(opaque bytes)", e.is_tensor ? dtype_name(e.dtype) : "-", shape,
                     codec::tkz_codec_name(e.codec), std::to_string(e.bytes), std::to_string(e.stored),
                     fmt::format("{:.3f}", ratio(e.bytes, e.stored))});
    }
    std::string text = table.render();
    text += fmt::format("{}: {} bytes -> {} bytes, ratio {:.3f}{}\n",
                        l.source == io::FileFormat::kUnknown ? "file" : io::format_name(l.source), l.original_bytes,
                        l.container_bytes, ratio(l.original_bytes, l.container_bytes),
                        l.has_base ? ", BitX base SHA-256 " + codec::sha256_hex(l.base_sha256) : "");
    cli::write_stdout(text);
  }
  if (common.json) {
    json doc = {{"input", o.input},
                {"source", l.source == io::FileFormat::kUnknown ? "file" : io::format_name(l.source)},
                {"original_bytes", l.original_bytes},
                {"container_bytes", l.container_bytes},
                {"ratio", cli::json_number(ratio(l.original_bytes, l.container_bytes))},
                {l.digest.name(), l.digest.hex()},
                {"records", entries_json(shown)}};
    if (l.has_base) doc["base_sha256"] = codec::sha256_hex(l.base_sha256);
    cli::write_json(doc, *common.json);
  }
  return cli::kExitOk;
}

}  // namespace tk::tcompress
