// Writing a .tkz container in one pass over the input (container_format.h has the layout).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>

#include <omp.h>

#include <zstd.h>

#include "tk/codec/container.h"
#include "tk/codec/container_format.h"
#include "tk/core/error.h"
#include "tk/io/format_damage.h"
#include "tk/io/safetensors.h"
#include "zstd_file.h"

namespace tk::codec {

const char* tkz_codec_name(TkzCodec codec) {
  switch (codec) {
    case TkzCodec::kLossless: return "lossless";
    case TkzCodec::kZstd: return "zstd";
    case TkzCodec::kBitxRef: return "bitx-ref";
    case TkzCodec::kBitxDelta: return "bitx-delta";
    case TkzCodec::kLossy: return "lossy";
    case TkzCodec::kRaw: return "raw";
    case TkzCodec::kZstdWhole: return "zstd-whole";
  }
  return "unknown";
}

namespace {

using namespace tkz;

// Input bytes that may wait for the digest's thread.
constexpr size_t kMaxPendingDigest = size_t{256} << 20;

// The input's bytes in order, digested as they are taken: views of the input mapped
// (regular files, memory; no copy), a fresh buffer per piece for pipes.
class ByteSource {
 public:
  ByteSource(io::InputStream& in, DigestKind digest)
      : in_(in), mapped_(in.map()), digest_(digest, kMaxPendingDigest) {}

  uint64_t position() const { return position_; }
  std::optional<uint64_t> size() const { return in_.size(); }

  // Exactly `n` bytes; kInvalidInput "truncated WHAT" when the input ends first.
  Buffer take(uint64_t n, const char* what) {
    Buffer piece = take_up_to(n);
    if (piece.size() != n) throw invalid_input(std::string("truncated ") + what, in_.name());
    return piece;
  }

  // Up to `n` bytes; fewer only at the end of the input.
  Buffer take_up_to(uint64_t n) {
    Buffer piece;
    if (mapped_) {
      piece = in_.read_view(std::min<uint64_t>(n, *in_.size() - in_.position()), "input");
    } else {
      piece = read_growing(n);
    }
    position_ += piece.size();
    digest_.update(piece);
    return piece;
  }

  FileDigest finish() { return digest_.finish(); }

 private:
  // Read up to `n` bytes from a pipe into a buffer that grows with what arrives, so a
  // header that declares a huge tensor cannot make us allocate more than twice what
  // the input really holds.
  Buffer read_growing(uint64_t n) {
    constexpr uint64_t kFirst = 64 << 20;
    Buffer buf = Buffer::allocate(std::min(n, kFirst));
    uint64_t got = 0;
    for (;;) {
      got += in_.read(buf.mutable_data() + got, buf.size() - got);
      if (got < buf.size() || got == n) break;
      Buffer bigger = Buffer::allocate(std::min(n, 2 * buf.size()));
      std::memcpy(bigger.mutable_data(), buf.data(), got);
      buf = std::move(bigger);
    }
    return got == 0 ? Buffer() : buf.slice(0, got);
  }

  io::InputStream& in_;
  bool mapped_;
  uint64_t position_ = 0;
  BackgroundDigest digest_;
};

// A record's codec and payload; a raw record's payload is the data itself.
struct Coding {
  TkzCodec codec = TkzCodec::kRaw;
  std::vector<uint8_t> payload;
  uint64_t stored(std::span<const uint8_t> data) const {
    return codec == TkzCodec::kRaw ? data.size() : payload.size();
  }
};

// One zstd frame of all of `data`.
std::vector<uint8_t> zstd_whole(std::span<const uint8_t> data, int level) {
  // One context per thread: a fresh one per call cleared its tables each time (the
  // samples and the small tensors make many calls).
  struct Context {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ~Context() { ZSTD_freeCCtx(cctx); }
  };
  thread_local Context context;
  if (context.cctx == nullptr) throw internal_error("zstd: out of memory");
  std::vector<uint8_t> out(ZSTD_compressBound(data.size()));
  const size_t n = ZSTD_compressCCtx(context.cctx, out.data(), out.size(), data.data(), data.size(), level);
  if (ZSTD_isError(n)) throw internal_error(std::string("zstd failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

// zstd on the raw bytes of `data`: one frame when it decodes in one piece, else a
// lossless frame of dtype U8 (zstd per chunk). Neither wins everywhere (per-channel f32
// steps favour chunks by 1-3%, per-tensor ones one frame by 1%); one frame is the one
// that stays under `zstd -3` on every file of scripts/bench/tcompress_quantized_vs_zstd.py
// with one pass (see BENCHMARKS: weights quantized at the source).
Coding zstd_coding(std::span<const uint8_t> data, const LosslessOptions& options) {
  if (data.size() <= kTkzZstdWholeMax) return {TkzCodec::kZstdWhole, zstd_whole(data, options.level)};
  return {TkzCodec::kZstd, lossless_compress(DType::kU8, data, options)};
}

// A float tensor up to this size is coded both ways in full; a larger one is first
// coded both ways on a sample (kSamplePieces pieces spread over it, 1/kSampleShare of it
// and at least this much in all), and in full only by the sample's winner unless the
// two estimates lie within kCloseEstimates of each other. (An eighth cost trained f32
// weights 50% more time than the planes alone; see BENCHMARKS: weights quantized at
// the source.)
constexpr size_t kSampleBytes = 32 << 10;
constexpr size_t kSampleShare = 32;
constexpr size_t kSamplePieces = 4;
constexpr double kCloseEstimates = 0.04;

struct SampleSizes {
  double planes = 0, zstd = 0;
};

SampleSizes sample_sizes(DType dtype, std::span<const uint8_t> data, const LosslessOptions& options) {
  const size_t piece = (std::max(kSampleBytes, data.size() / kSampleShare) / kSamplePieces) & ~size_t{63};
  const size_t stride = (data.size() - piece) / (kSamplePieces - 1) & ~size_t{63};
  SampleSizes s;
  for (size_t k = 0; k < kSamplePieces; ++k) {
    const std::span<const uint8_t> bytes = data.subspan(k * stride, piece);
    s.planes += static_cast<double>(lossless_compress(dtype, bytes, options).size());
    s.zstd += static_cast<double>(zstd_whole(bytes, options.level).size());
  }
  return s;
}

// The smallest exact coding of `data` (elements of `dtype`) among the byte-grouped frame
// and, for floats of 16 bits and more, zstd on the raw bytes (values from a small set,
// such as weights quantized at the source, repeat as whole elements, which byte planes
// break up; then zstd -3 on the file beats the planes); the raw bytes when no coding is
// smaller. Large floats are coded in full by the codec that wins on a sample (or both
// when it is close), so the choice costs about one pass, not two. Other dtypes' frames
// are already zstd on the raw bytes; one frame of the whole tensor is tried as well
// where a frame's fixed bytes (header, chunk table) matter or its streams stayed raw
// because zstd saved less than 5% (packed codes).
Coding exact_coding(DType dtype, std::span<const uint8_t> data, const LosslessOptions& options) {
  Coding best;
  if (dtype_is_float(dtype) && dtype_bits(dtype) >= 16) {
    bool planes = true, zstd = true;
    if (data.size() > kSampleBytes) {
      const SampleSizes s = sample_sizes(dtype, data, options);
      planes = s.planes < s.zstd * (1 + kCloseEstimates);
      zstd = s.zstd < s.planes * (1 + kCloseEstimates);
    }
    if (planes) best = {TkzCodec::kLossless, lossless_compress(dtype, data, options)};
    if (zstd) {
      Coding z = zstd_coding(data, options);
      if (!planes || z.payload.size() < best.payload.size()) best = std::move(z);
    }
  } else {
    best = {TkzCodec::kLossless, lossless_compress(dtype, data, options)};
    if (!data.empty() && data.size() <= kTkzZstdWholeMax) {
      std::vector<uint8_t> whole = zstd_whole(data, options.level);
      if (whole.size() < best.payload.size()) best = {TkzCodec::kZstdWhole, std::move(whole)};
    }
  }
  if (best.payload.size() >= data.size()) best = {TkzCodec::kRaw, {}};
  return best;
}

class ContainerWriter {
 public:
  // The container's bytes go out on a thread of their own, so that the copy into the
  // page cache overlaps the coding of the next tensors.
  ContainerWriter(io::OutputStream& out, const TkzCompressOptions& options)
      : out_(out),
        options_(options),
        position_(out.position()),
        queue_([this](const Buffer& bytes) { out_.write(bytes.data(), bytes.size()); }, kMaxPendingWrite) {}

  void write_header(const FileHeader& header) { write(Buffer::adopt(encode_file_header(header))); }

  void write_opaque(const Buffer& bytes) {
    RecordHeader r;
    r.kind = Kind::kOpaque;
    r.codec = TkzCodec::kZstd;
    r.id = opaque_count_++;
    r.decoded = bytes.size();
    std::vector<uint8_t> frame = lossless_compress(DType::kU8, {bytes.data(), bytes.size()}, options_.lossless);
    const bool raw = frame.size() >= bytes.size();
    if (raw) r.codec = TkzCodec::kRaw;
    r.hash = record_hash(r.codec, [&] { return hash({bytes.data(), bytes.size()}); });
    write_record(r, raw ? bytes : Buffer::adopt(std::move(frame)), {});
  }

  // The record's XXH3 of its decoded bytes. A version-2 container leaves it 0 for a
  // lossless frame, which checks each chunk's decoded bytes itself: computing it was
  // 5-8% of compressing. Version 1 (SHA-256) keeps it for every record, as the readers
  // before version 2 check it.
  template <typename HashOfData>
  uint64_t record_hash(TkzCodec codec, HashOfData&& hash_of_data) const {
    return frame_checked(codec) && options_.digest != DigestKind::kSha256 ? 0 : hash_of_data();
  }

  // A tensor's record header and coding, ready to be written.
  struct CodedTensor {
    RecordHeader r;
    Coding coding;
  };

  // Code tensor `id`, its frames on `lossless.threads` threads. Reads the options only,
  // so several tensors may be coded at once, except with a lossy hook.
  CodedTensor code_tensor(uint32_t id, const io::TensorInfo& info, const Buffer& bytes,
                          const LosslessOptions& lossless) const {
    std::span<const uint8_t> data(bytes.data(), bytes.size());
    CodedTensor c;
    RecordHeader& r = c.r;
    Coding& coding = c.coding;
    r.kind = Kind::kTensor;
    r.id = id;
    r.decoded = data.size();
    std::optional<uint64_t> data_hash;  // computed where needed
    auto hash_of_data = [&] {
      if (!data_hash) data_hash = hash(data);
      return *data_hash;
    };
    const BitxBase::Tensor* base = options_.base ? options_.base->match(info) : nullptr;
    // memcmp only with bytes to compare: an empty tensor's spans may hold null pointers.
    if (base != nullptr && bitx_tensor_hash(base->bytes) == hash_of_data() &&
        (data.empty() || std::memcmp(base->bytes.data(), data.data(), data.size()) == 0)) {
      coding.codec = TkzCodec::kBitxRef;
      r.base_hash = hash_of_data();
    } else if (base != nullptr) {
      // A delta only where it is smaller than coding the tensor on its own: two
      // separate trainings of one architecture share no bits worth the XOR.
      coding = exact_coding(info.dtype, data, lossless);
      std::vector<uint8_t> delta = bitx_encode(info.dtype, data, base->bytes, lossless);
      if (delta.size() < coding.stored(data)) {
        coding = {TkzCodec::kBitxDelta, std::move(delta)};
        r.base_hash = bitx_tensor_hash(base->bytes);
      }
    } else if (std::optional<std::vector<uint8_t>> lossy;
               options_.lossy && (lossy = options_.lossy(info, Tensor(info.dtype, info.shape, bytes)))) {
      coding = {TkzCodec::kLossy, std::move(*lossy)};
      r.hash = hash(coding.payload);
    } else {
      coding = exact_coding(info.dtype, data, lossless);
    }
    r.codec = coding.codec;
    if (r.codec != TkzCodec::kLossy) r.hash = record_hash(r.codec, hash_of_data);
    return c;
  }

  void write_tensor(CodedTensor&& c, const io::TensorInfo& info, const Buffer& bytes) {
    write_record(c.r, c.coding.codec == TkzCodec::kRaw ? bytes : Buffer::adopt(std::move(c.coding.payload)), info.name);
    result_.entries.back().dtype = info.dtype;
    result_.entries.back().shape = info.shape;
  }

  // The end record, the index and the footer.
  void finish(uint64_t original_bytes, const FileDigest& digest) {
    RecordHeader end;
    end.id = static_cast<uint32_t>(index_.size());
    end.decoded = original_bytes;
    write(record_header(end));
    Footer footer;
    footer.index_offset = position_;
    footer.original_bytes = original_bytes;
    footer.digest = digest.bytes;
    write(Buffer::adopt(encode_index_and_footer(index_, footer)));
    queue_.finish();
  }

  TkzCompressResult& result() { return result_; }

 private:
  // Up to this many bytes wait for the writing thread (a raw record's payload is a view
  // of the input and costs no memory).
  static constexpr size_t kMaxPendingWrite = size_t{64} << 20;

  void write(Buffer bytes) {
    position_ += bytes.size();
    if (!bytes.empty()) queue_.push(std::move(bytes));
  }

  static Buffer record_header(const RecordHeader& r) {
    std::vector<uint8_t> head(kRecordHeaderBytes);
    encode_record_header(r, head.data());
    return Buffer::adopt(std::move(head));
  }

  void write_record(const RecordHeader& r, Buffer payload, const std::string& name) {
    RecordHeader h = r;
    h.stored = payload.size();
    const uint64_t offset = position_;
    write(record_header(h));
    write(std::move(payload));
    index_.push_back({name, h.kind, h.codec, h.id, offset, h.decoded, h.stored});
    TkzEntry e;
    e.name = name;
    e.is_tensor = h.kind == Kind::kTensor;
    e.codec = h.codec;
    e.offset = offset;
    e.bytes = h.decoded;
    e.stored = h.stored;
    result_.entries.push_back(std::move(e));
  }

  io::OutputStream& out_;
  const TkzCompressOptions& options_;
  uint64_t position_;  // of the next byte queued, in the output
  BackgroundQueue queue_;
  std::vector<IndexEntry> index_;
  uint32_t opaque_count_ = 0;
  TkzCompressResult result_;
};

bool compact_allowed(const TkzCompressOptions& options) {
  return options.zstd_frame && options.base == nullptr && !options.lossy && options.digest == DigestKind::kXxh3_128;
}

// The rest of `in` when it holds at most `limit` bytes (a pipe is peeked that far). A
// file is mapped, not read: one cut short meanwhile is an I/O error, as on the
// container's own path, not a shorter file compressed.
std::optional<Buffer> small_input(io::InputStream& in, uint64_t limit) {
  if (!in.size()) return in.peek(limit + 1).size() > limit ? std::nullopt : std::optional(in.read_all());
  const uint64_t left = *in.size() - in.position();
  if (left > limit) return std::nullopt;
  in.map();
  return in.read_view(left, "input");
}

// A small file coded both ways, the smaller kept: a container's records, index and
// footer cost more than they save on a few tensors or none; a file without tensors,
// zstd-coded per chunk in opaque records, can still come out smaller as a container.
// `sized`: the file's size is known, as zstd records it then (not for a pipe).
TkzCompressResult smaller_of_both(const Buffer& file, bool sized, const std::string& name, io::OutputStream& out,
                                  const TkzCompressOptions& options) {
  TkzCompressOptions container_only = options;
  container_only.zstd_frame = false;
  std::vector<uint8_t> container, frame;
  TkzCompressResult r = tkz_compress(*io::InputStream::from_buffer(file, name),
                                     *io::OutputStream::to_memory(&container), container_only);
  zstd_file_compress(*io::InputStream::from_buffer(file, name), sized ? std::optional(file.size()) : std::nullopt,
                     *io::OutputStream::to_memory(&frame), options.lossless.level, 1, {});
  if (frame.size() < container.size()) {
    out.write(frame.data(), frame.size());
    r.zstd_frame = true;
    r.entries.clear();
    r.bytes_out = frame.size();
  } else {
    out.write(container.data(), container.size());
  }
  return r;
}

}  // namespace

TkzCompressResult tkz_compress(io::InputStream& in, io::OutputStream& out, const TkzCompressOptions& options) {
  io::FileFormat format = io::detect_format(in);
  if (format == io::FileFormat::kTkz) throw usage_error("input is already a .tkz container", in.name());
  if (options.opaque_record_bytes == 0) throw usage_error("opaque record size must be positive");
  // A damaged tensor file is told apart by its first bytes and its size: known now for
  // a file (so that a refusal comes first), at the end for a pipe.
  const std::span<const uint8_t> peeked = in.peek(io::kFormatDamageHead);
  const std::vector<uint8_t> head(peeked.begin(), peeked.end());
  // Detection calls a file with an out-of-bounds header length safetensors, so that
  // readers name the length; here it is kept as opaque bytes, with the warning below.
  const uint64_t size_hint = in.size() ? *in.size() - in.position() : UINT64_MAX;
  if (format == io::FileFormat::kSafetensors && io::format_damage(format, head, size_hint))
    format = io::FileFormat::kUnknown;
  std::string damage;
  auto check_damage = [&](uint64_t size) {
    if (auto d = io::format_damage(format, head, size)) {
      damage = fmt::format("looks like {}, but {}", io::format_name(d->looks_like), d->why);
      if (options.refuse_damaged) throw invalid_input(damage, in.name());
    }
  };
  if (in.size()) check_damage(*in.size() - in.position());
  if (compact_allowed(options)) {
    if (std::optional<Buffer> file = small_input(in, kTkzCompareMax)) {
      TkzCompressResult result = smaller_of_both(*file, in.size().has_value(), in.name(), out, options);
      if (options.progress) options.progress(file->size(), file->size());
      return result;
    }
  }
  if (compact_allowed(options) && format != io::FileFormat::kSafetensors) {
    // No tensors: the container would be opaque records of zstd, whose fixed bytes a
    // frame saves; the frame is zstd's own, so never larger than zstd. A shard index is
    // JSON text like any other here.
    const int threads = options.lossless.threads > 0 ? options.lossless.threads : omp_get_max_threads();
    const std::optional<uint64_t> size = in.size() ? std::optional(*in.size() - in.position()) : std::nullopt;
    const ZstdFileResult z = zstd_file_compress(in, size, out, options.lossless.level, threads, options.progress);
    if (!in.size()) check_damage(z.bytes_in);
    TkzCompressResult result;
    result.source = format == io::FileFormat::kShardIndex ? io::FileFormat::kUnknown : format;
    result.zstd_frame = true;
    result.damage = damage;
    result.bytes_in = z.bytes_in;
    result.bytes_out = z.bytes_out;
    result.digest = z.digest;
    return result;
  }
  ByteSource src(in, options.digest);
  ContainerWriter writer(out, options);
  const uint64_t out_begin = out.position();
  auto progress = [&] {
    if (options.progress) options.progress(src.position(), src.size());
  };

  FileHeader header;
  header.source = source_of(format);
  header.digest = options.digest;
  if (options.base != nullptr) {
    header.flags |= kFlagBase;
    header.base_sha256 = options.base->sha256();
  }
  io::SafetensorsHeader st;
  if (format == io::FileFormat::kSafetensors) {
    Buffer length = src.take(8, "safetensors header");
    const uint64_t json_len = load_le<uint64_t>(length.data());
    if (json_len > io::kSafetensorsMaxHeader) throw invalid_input("safetensors header too large", in.name());
    Buffer json = src.take(json_len, "safetensors header");
    try {
      st = io::safetensors_parse_header({json.data(), json.size()});
    } catch (const Error& e) {
      throw e.with_context(in.name());
    }
    if (st.tensors.size() >= UINT32_MAX) throw invalid_input("too many tensors", in.name());
    header.original_header.assign(length.data(), length.data() + 8);
    header.original_header.insert(header.original_header.end(), json.data(), json.data() + json.size());
  }
  writer.write_header(header);

  // Tensors in data order; bytes between them (none in a valid file, but kept if a
  // writer left some) and after the last go into opaque records, so that every byte of
  // the input is restored. Tensors under kAloneBytes are coded a batch at a time, one
  // tensor per thread, and written in order; a larger one alone, its chunks in parallel.
  // One parallel region per batch, not per tensor: a model of many small tensors gained
  // nothing from a second thread when each tensor opened its own (docs/BENCHMARKS.md).
  constexpr uint64_t kAloneBytes = 8 << 20;
  constexpr uint64_t kBatchBytes = 64 << 20;
  constexpr size_t kBatchTensors = 1024;
  const int threads = options.lossless.threads > 0 ? options.lossless.threads : omp_get_max_threads();
  LosslessOptions serial = options.lossless;
  serial.threads = 1;
  struct Pending {
    size_t index;
    Buffer bytes;
  };
  std::vector<Pending> batch;
  uint64_t batch_bytes = 0;
  auto located = [&](const Error& e, size_t index) {
    return e.with_context("tensor '" + st.tensors[index].name + "'");
  };
  auto flush = [&] {
    std::vector<ContainerWriter::CodedTensor> coded(batch.size());
    std::vector<std::exception_ptr> errors(batch.size());
    auto code = [&](size_t k, const LosslessOptions& lossless) {
      try {
        coded[k] = writer.code_tensor(static_cast<uint32_t>(batch[k].index), st.tensors[batch[k].index],
                                      batch[k].bytes, lossless);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    };
    if (batch.size() == 1) {
      code(0, options.lossless);
    } else {
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::min<int>(threads, static_cast<int>(batch.size())))
      for (size_t k = 0; k < batch.size(); ++k) code(k, serial);
    }
    for (size_t k = 0; k < batch.size(); ++k) {
      try {
        if (errors[k]) std::rethrow_exception(errors[k]);
      } catch (const Error& e) {
        throw located(e, batch[k].index);
      }
      writer.write_tensor(std::move(coded[k]), st.tensors[batch[k].index], batch[k].bytes);
      progress();
    }
    batch.clear();
    batch_bytes = 0;
  };
  const uint64_t data_begin = header.original_header.size();
  for (size_t i = 0; i < st.tensors.size(); ++i) {
    const io::TensorInfo& info = st.tensors[i];
    const uint64_t at = data_begin + st.offsets[i];
    if (at < src.position()) throw invalid_input("overlapping tensors", in.name() + ": tensor '" + info.name + "'");
    if (src.position() < at) flush();
    while (src.position() < at) {
      Buffer gap = src.take(std::min(at - src.position(), options.opaque_record_bytes), "safetensors data");
      writer.write_opaque(gap);
    }
    // Alone: a large tensor, and every tensor of a lossy run (its hook is not shared).
    const bool alone = info.nbytes >= kAloneBytes || options.lossy || threads == 1;
    if (!batch.empty() && (alone || batch_bytes + info.nbytes > kBatchBytes || batch.size() == kBatchTensors)) flush();
    batch.push_back({i, src.take(info.nbytes, "safetensors data")});
    batch_bytes += info.nbytes;
    if (alone) flush();
  }
  flush();
  for (;;) {
    Buffer rest = src.take_up_to(options.opaque_record_bytes);
    if (rest.empty()) break;
    writer.write_opaque(rest);
    progress();
  }

  if (!in.size()) check_damage(src.position());
  TkzCompressResult result = std::move(writer.result());
  result.damage = damage;
  result.digest = src.finish();
  writer.finish(src.position(), result.digest);
  result.source = format == io::FileFormat::kShardIndex ? io::FileFormat::kUnknown : format;
  result.bytes_in = src.position();
  result.bytes_out = out.position() - out_begin;
  return result;
}

}  // namespace tk::codec
