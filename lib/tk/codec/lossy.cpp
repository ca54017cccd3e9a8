// The lossy frame. Layout, all integers little-endian:
//
//   0    4   magic "TKLY"
//   4    1   version (1)
//   5    1   method (LossyMethod: 0 hevc, 1 av1, 2 h264, 3 quant)
//   6    1   dtype of the tensor (F32, F16, BF16 or F64)
//   7    1   flags: bit 0 rotated
//   8    4   rank R (at most 32)
//   12   8R  shape
//        8   rotation seed
//        24  measured error: relative RMSE, SQNR (dB), max abs error (f64 each)
//            method block:
//              quant: step (f32), 16 centroid offsets (f32), plane count P (u8, 1..4),
//                     P x C chunk lengths (u32; C chunks of 2^22 codes per plane), the
//                     chunks, each a method byte and its data (lossy_quant.cpp)
//              video: bit depth (u8), CRF (u8), 0 (u16), frame width, height (u32),
//                     scale count S (u64), S scales (f32), packet count N (u64),
//                     N packet lengths (u32), the packets
//   end-8 8  XXH3-64 of every byte before it
//
// The tensor is coded as a matrix (see View): rows of `cols` values padded with zeros to
// `padded` columns, rotated row by row when flagged; both methods code that matrix.
#include "tk/codec/lossy.h"

#include <xxhash.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "tk/codec/hadamard.h"
#include "tk/codec/lossy_internal.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/core/stats.h"

namespace tk::codec {
namespace {

constexpr uint8_t kMagic[4] = {'T', 'K', 'L', 'Y'};
constexpr uint8_t kVersion = 1;
constexpr uint32_t kMaxRank = 32;
constexpr uint8_t kFlagRotated = 1;

bool is_lossy_dtype(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 || d == DType::kF64; }

VideoCodec video_codec_of(LossyMethod m) {
  switch (m) {
    case LossyMethod::kVideoHevc: return VideoCodec::kHevc;
    case LossyMethod::kVideoAv1: return VideoCodec::kAv1;
    default: return VideoCodec::kH264;
  }
}

// The matrix a tensor is coded as: the last dimension as columns and the others as
// rows; a tensor of rank < 2, or whose last dimension is under kHadamardAlign, as a
// near-square matrix of its elements in order (the tail of the last row is zero).
struct View {
  uint64_t values = 0, rows = 0, cols = 0, padded = 0;
};

View view_of(const Shape& shape) {
  View v;
  v.values = shape_numel(shape);
  if (shape.size() >= 2 && static_cast<uint64_t>(shape.back()) >= kHadamardAlign) {
    v.cols = static_cast<uint64_t>(shape.back());
  } else if (v.values > 0) {
    v.cols = static_cast<uint64_t>(std::ceil(std::sqrt(static_cast<double>(v.values))));
  }
  v.rows = v.cols ? (v.values + v.cols - 1) / v.cols : 0;
  v.padded = hadamard_padded_cols(v.cols);
  return v;
}

uint64_t row_values(const View& v, uint64_t row) { return std::min(v.cols, v.values - row * v.cols); }

std::vector<float> load_matrix(const Tensor& t, const View& v) {
  std::vector<float> m(v.rows * v.padded, 0.0f);
  uint64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t r = 0; r < static_cast<int64_t>(v.rows); ++r) {
    const uint64_t row = static_cast<uint64_t>(r), n = row_values(v, row);
    float* out = m.data() + row * v.padded;
    convert_to_f32(t.dtype(), t.data(), row * v.cols, n, out);
    for (uint64_t c = 0; c < n; ++c) bad += !std::isfinite(out[c]);
  }
  if (bad) throw invalid_input("lossy coding needs finite values; the tensor holds " + std::to_string(bad) + " NaN or Inf");
  return m;
}

// ---- the method payloads ----

struct Header {
  LossyMethod method = LossyMethod::kQuant;
  DType dtype = DType::kF32;
  bool rotated = false;
  Shape shape;
  uint64_t seed = 0;
  LossyReport error;  // rel_rmse, sqnr_db, max_abs_error
};


struct Payload {
  LossyMethod method = LossyMethod::kQuant;
  detail::QuantPayload quant;
  detail::VideoPayload video;
};

// ---- decoding, a unit at a time ----
//
// The matrix is decoded in units of at most kUnitCells cells, in row-major order: bands
// of whole rows, or pieces of one row when a row is longer. Each unit is decoded,
// unrotated and cast on its own, so a decode holds one unit and what its method keeps
// around it (a quant chunk; the frame rows of the video tiling it spans), whatever size
// the frame claims for its tensor.
constexpr uint64_t kUnitCells = uint64_t{1} << 23;

class CellSource {
 public:
  virtual ~CellSource() = default;
  // Cells of rows [row, row + rows), columns [col, col + cols), row after row.
  virtual void fill(uint64_t row, uint64_t rows, uint64_t col, uint64_t cols, float* out) = 0;
};

// Quant cells come in chunks of kQuantChunk in row-major order. Chunks inside a unit are
// decoded in place; one that a unit ends inside is kept for the next unit.
class QuantCells final : public CellSource {
 public:
  QuantCells(const detail::QuantPayload& payload, const View& v, int threads)
      : payload_(payload), padded_(v.padded), cells_(v.rows * v.padded), threads_(threads) {}

  void fill(uint64_t row, uint64_t rows, uint64_t col, uint64_t cols, float* out) override {
    constexpr uint64_t K = detail::kQuantChunk;
    const uint64_t a = row * padded_ + col, b = a + rows * cols;
    std::vector<detail::QuantChunkTarget> targets;
    std::vector<std::pair<uint64_t, std::vector<float>>> edges;  // chunks the unit holds in part
    bool use_kept = false;
    for (uint64_t c = a / K; c * K < b; ++c) {
      const uint64_t begin = c * K, end = std::min(begin + K, cells_);
      if (begin >= a && end <= b)
        targets.push_back({c, out + (begin - a)});
      else if (c == kept_chunk_)
        use_kept = true;
      else
        edges.emplace_back(c, std::vector<float>(end - begin));
    }
    for (auto& [c, values] : edges) targets.push_back({c, values.data()});
    detail::quant_decode_chunks(payload_, cells_, targets, threads_);
    const auto copy_part = [&](uint64_t c, const std::vector<float>& values) {
      const uint64_t begin = c * K, lo = std::max(begin, a), hi = std::min(begin + values.size(), b);
      std::memcpy(out + (lo - a), values.data() + (lo - begin), (hi - lo) * sizeof(float));
    };
    if (use_kept) copy_part(kept_chunk_, kept_);
    for (const auto& [c, values] : edges) copy_part(c, values);
    if (!edges.empty() && (edges.back().first + 1) * K > b) {
      kept_chunk_ = edges.back().first;
      kept_ = std::move(edges.back().second);
    }
  }

 private:
  const detail::QuantPayload& payload_;
  uint64_t padded_, cells_;
  int threads_;
  uint64_t kept_chunk_ = UINT64_MAX;
  std::vector<float> kept_;
};

// Video cells come from frames tiled over the matrix; the frame rows a unit spans are
// decoded once and kept while later units still read them.
class VideoCells final : public CellSource {
 public:
  VideoCells(const detail::VideoPayload& payload, const View& v, int threads)
      : payload_(payload), padded_(v.padded), threads_(threads) {}

  void fill(uint64_t row, uint64_t rows, uint64_t col, uint64_t cols, float* out) override {
    const uint64_t height = payload_.height;
    const uint64_t first = row / height, end = (row + rows - 1) / height + 1;
    const uint64_t held_end = held_.first + held_.count;
    if (first < held_.first || end > held_end) {
      const bool keep = first >= held_.first && first < held_end;
      const uint64_t from = keep ? held_end : first;
      detail::VideoFrameRows fresh = detail::video_decode_frame_rows(payload_, padded_, from, end - from, threads_);
      if (keep) {
        const uint64_t per_row = held_.count ? held_.luma.size() / held_.count : 0;
        held_.luma.erase(held_.luma.begin(), held_.luma.begin() + static_cast<ptrdiff_t>((first - held_.first) * per_row));
        held_.luma.insert(held_.luma.end(), fresh.luma.begin(), fresh.luma.end());
        held_.first = first;
        held_.count = end - first;
      } else {
        held_ = std::move(fresh);
      }
    }
    detail::video_cells(payload_, held_, padded_, row, rows, col, cols, out);
  }

 private:
  const detail::VideoPayload& payload_;
  uint64_t padded_;
  int threads_;
  detail::VideoFrameRows held_;
};

// Decode every unit of the matrix and hand the tensor's bytes to `sink` in order.
void decode_units(const Header& h, const View& v, CellSource& source, uint64_t unit_cells, const LossySink& sink) {
  if (unit_cells == 0 || unit_cells % kHadamardMaxBlock != 0)
    throw internal_error("lossy decode unit of " + std::to_string(unit_cells) + " cells");
  const uint64_t width = dtype_storage_bytes(h.dtype, 1);
  const uint64_t band = v.padded <= unit_cells ? unit_cells / v.padded : 1;  // rows a unit
  const uint64_t piece = std::min(v.padded, unit_cells);                     // columns a unit
  std::vector<float> cells;
  for (uint64_t row = 0; row < v.rows; row += band) {
    const uint64_t rows = std::min(band, v.rows - row);
    for (uint64_t col = 0; col < v.padded; col += piece) {
      const uint64_t cols = std::min(piece, v.padded - col);
      // Tensor values in the unit: each row's real columns (the rest is padding).
      const auto real = [&](uint64_t r) {
        const uint64_t n = row_values(v, row + r);
        return n > col ? std::min(n - col, cols) : 0;
      };
      uint64_t values = 0;
      for (uint64_t r = 0; r < rows; ++r) values += real(r);
      if (values == 0) continue;
      cells.resize(rows * cols);
      source.fill(row, rows, col, cols, cells.data());
      if (h.rotated) hadamard_unrotate_columns(cells.data(), rows, v.padded, col, cols, h.seed);
      Buffer out = Buffer::allocate(values * width);
      // Every row but the last of a near-square view is full: row r starts at r * real(0).
#pragma omp parallel for schedule(static) if (rows * cols >= (uint64_t{1} << 16))
      for (int64_t r = 0; r < static_cast<int64_t>(rows); ++r) {
        const uint64_t i = static_cast<uint64_t>(r);
        cast_array(DType::kF32, cells.data() + i * cols, h.dtype, out.mutable_data() + i * real(0) * width, real(i),
                   {.saturate = true});
      }
      sink(std::move(out));
    }
  }
}

void decode_payload(const Header& h, const View& v, const Payload& p, int threads, const LossySink& sink,
                    uint64_t unit_cells = kUnitCells) {
  if (p.method == LossyMethod::kQuant) {
    QuantCells cells(p.quant, v, threads);
    decode_units(h, v, cells, unit_cells, sink);
  } else {
    VideoCells cells(p.video, v, threads);
    decode_units(h, v, cells, unit_cells, sink);
  }
}

// The tensor a payload decodes to.
Tensor decode_tensor(const Header& h, const View& v, const Payload& p, int threads) {
  Tensor t = Tensor::empty(h.dtype, h.shape);
  uint64_t at = 0;
  decode_payload(h, v, p, threads, [&](Buffer piece) {
    std::memcpy(t.mutable_data() + at, piece.data(), piece.size());
    at += piece.size();
  });
  if (at != t.nbytes()) throw internal_error("lossy frame decoded to another size");
  return t;
}

// ---- writing and reading frames ----

class Writer {
 public:
  template <typename T> void put(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof value);
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  void put_bytes(std::span<const uint8_t> b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  std::vector<uint8_t> finish() {
    put<uint64_t>(XXH3_64bits(bytes_.data(), bytes_.size()));
    return std::move(bytes_);
  }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : bytes_(b) {}
  template <typename T> T take() {
    T value;
    std::memcpy(&value, bytes(sizeof value).data(), sizeof value);
    return value;
  }
  std::span<const uint8_t> bytes(uint64_t n) {
    if (n > bytes_.size() - at_) throw invalid_input("lossy frame truncated", "offset " + std::to_string(at_));
    auto s = bytes_.subspan(at_, n);
    at_ += n;
    return s;
  }
  uint64_t left() const { return bytes_.size() - at_; }
  uint64_t offset() const { return at_; }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t at_ = 0;
};

std::vector<uint8_t> write_frame(const Header& h, const Payload& p) {
  Writer w;
  for (uint8_t m : kMagic) w.put(m);
  w.put(kVersion);
  w.put(static_cast<uint8_t>(h.method));
  w.put(static_cast<uint8_t>(h.dtype));
  w.put(static_cast<uint8_t>(h.rotated ? kFlagRotated : 0));
  w.put(static_cast<uint32_t>(h.shape.size()));
  for (int64_t d : h.shape) w.put(d);
  w.put(h.seed);
  w.put(h.error.rel_rmse);
  w.put(h.error.sqnr_db);
  w.put(h.error.max_abs_error);
  if (h.method == LossyMethod::kQuant) {
    w.put(p.quant.step);
    for (float o : p.quant.offsets) w.put(o);
    w.put(static_cast<uint8_t>(p.quant.planes));
    for (const auto& chunk : p.quant.chunks) w.put(static_cast<uint32_t>(chunk.size()));
    for (const auto& chunk : p.quant.chunks) w.put_bytes(chunk);
  } else {
    const detail::VideoPayload& v = p.video;
    w.put(static_cast<uint8_t>(v.bit_depth));
    w.put(static_cast<uint8_t>(v.crf));
    w.put(uint16_t{0});
    w.put(v.width);
    w.put(v.height);
    w.put(static_cast<uint64_t>(v.scales.size()));
    for (float s : v.scales) w.put(s);
    w.put(static_cast<uint64_t>(v.packets.size()));
    for (const auto& packet : v.packets) w.put(static_cast<uint32_t>(packet.size()));
    for (const auto& packet : v.packets) w.put_bytes(packet);
  }
  return w.finish();
}

// Parse and validate a frame; every count is checked against the frame's size and the
// shape before anything is allocated.
void read_frame(std::span<const uint8_t> frame, Header& h, View& v, Payload& p) {
  if (frame.size() < sizeof kMagic + 8 || std::memcmp(frame.data(), kMagic, sizeof kMagic) != 0)
    throw invalid_input("not a lossy frame (bad magic)");
  const std::span<const uint8_t> body = frame.first(frame.size() - 8);
  uint64_t stored;
  std::memcpy(&stored, frame.data() + body.size(), 8);
  Reader r(body);
  r.bytes(sizeof kMagic);
  const uint8_t version = r.take<uint8_t>();
  if (version != kVersion) throw invalid_input("lossy frame version " + std::to_string(version) + " is not supported");
  if (XXH3_64bits(body.data(), body.size()) != stored) throw invalid_input("lossy frame checksum mismatch");
  const uint8_t method = r.take<uint8_t>();
  if (method > static_cast<uint8_t>(LossyMethod::kQuant))
    throw invalid_input("unknown lossy method " + std::to_string(method));
  h.method = static_cast<LossyMethod>(method);
  const uint8_t dtype = r.take<uint8_t>();
  h.dtype = static_cast<DType>(dtype);
  if (!is_lossy_dtype(h.dtype)) throw invalid_input("lossy frame of dtype code " + std::to_string(dtype));
  const uint8_t flags = r.take<uint8_t>();
  if (flags & ~kFlagRotated) throw invalid_input("unknown lossy frame flags");
  h.rotated = flags & kFlagRotated;
  const uint32_t rank = r.take<uint32_t>();
  if (rank > kMaxRank) throw invalid_input("lossy frame of rank " + std::to_string(rank));
  h.shape.resize(rank);
  for (auto& d : h.shape) d = r.take<int64_t>();
  v = view_of(h.shape);  // checks the element count
  h.seed = r.take<uint64_t>();
  h.error.rel_rmse = r.take<double>();
  h.error.sqnr_db = r.take<double>();
  h.error.max_abs_error = r.take<double>();
  p.method = h.method;
  const uint64_t cells = v.rows * v.padded;
  if (h.method == LossyMethod::kQuant) {
    auto& q = p.quant;
    q.step = r.take<float>();
    for (auto& o : q.offsets) o = r.take<float>();
    if (!(q.step > 0) || !std::isfinite(q.step)) throw invalid_input("lossy frame: bad quantization step");
    for (float o : q.offsets)
      if (!(std::fabs(o) <= 1)) throw invalid_input("lossy frame: bad centroid offset");
    q.planes = r.take<uint8_t>();
    if (q.planes < 1 || q.planes > 4) throw invalid_input("lossy frame: " + std::to_string(q.planes) + " code planes");
    const uint64_t chunks = detail::quant_chunk_count(cells) * static_cast<uint64_t>(q.planes);
    if (chunks > r.left() / 4) throw invalid_input("lossy frame: chunk count does not match the shape");
    std::vector<uint32_t> lengths(chunks);
    for (auto& n : lengths) n = r.take<uint32_t>();
    for (uint32_t n : lengths) {
      const auto bytes = r.bytes(n);
      q.chunks.emplace_back(bytes.begin(), bytes.end());
    }
  } else {
    auto& vp = p.video;
    vp.codec = video_codec_of(h.method);
    vp.bit_depth = r.take<uint8_t>();
    vp.crf = r.take<uint8_t>();
    r.take<uint16_t>();
    vp.width = r.take<uint32_t>();
    vp.height = r.take<uint32_t>();
    uint32_t width, height;
    detail::video_geometry(v.rows, v.padded, &width, &height);
    if ((vp.bit_depth != 8 && vp.bit_depth != 10) || vp.crf > video_crf_max(vp.codec) || vp.width != width ||
        vp.height != height)
      throw invalid_input("lossy frame: bad video parameters");
    const uint64_t scales = r.take<uint64_t>();
    if (scales != detail::video_scale_count(v.rows, v.padded) || scales > r.left() / 4)
      throw invalid_input("lossy frame: scale count does not match the shape");
    vp.scales.resize(scales);
    for (auto& s : vp.scales) {
      s = r.take<float>();
      if (!(s >= 0) || !std::isfinite(s)) throw invalid_input("lossy frame: bad scale");
    }
    const uint64_t packets = r.take<uint64_t>();
    if (packets != detail::video_frame_count(v.rows, v.padded, width, height) || packets > r.left() / 4)
      throw invalid_input("lossy frame: packet count does not match the shape");
    std::vector<uint32_t> lengths(packets);
    for (auto& n : lengths) n = r.take<uint32_t>();
    for (uint32_t n : lengths) {
      const auto bytes = r.bytes(n);
      vp.packets.emplace_back(bytes.begin(), bytes.end());
    }
  }
  if (r.left() != 0) throw invalid_input("lossy frame: trailing bytes", "offset " + std::to_string(r.offset()));
}

void check_options(const Tensor& tensor, const LossyOptions& o) {
  if (!is_lossy_dtype(tensor.dtype()))
    throw usage_error(std::string("lossy coding takes F32, F16, BF16 or F64 tensors, not ") + dtype_name(tensor.dtype()));
  const bool video = o.method != LossyMethod::kQuant;
  if (video && (o.crf >= 0) == (o.bits_per_value > 0))
    throw usage_error("give the video codec either a CRF or a bits-per-value target");
  if (!video && (o.crf >= 0 || !(o.bits_per_value > 0)))
    throw usage_error("quant takes a bits-per-value target (and no CRF)");
  if (o.bits_per_value < 0 || o.bits_per_value > 16 || !std::isfinite(o.bits_per_value))
    throw usage_error("bits per value must be in (0, 16]");
  if (video && o.bit_depth != 8 && o.bit_depth != 10) throw usage_error("video bit depth must be 8 or 10");
  if (video && o.crf > video_crf_max(video_codec_of(o.method)))
    throw usage_error(std::string("CRF for ") + lossy_method_name(o.method) + " must be at most " +
                      std::to_string(video_crf_max(video_codec_of(o.method))));
  std::string why;
  if (!lossy_available(o.method, &why)) throw unavailable(why);
}

}  // namespace

bool lossy_available(LossyMethod method, std::string* why) {
  if (method == LossyMethod::kQuant) return true;
  return video_available(video_codec_of(method), why);
}

bool lossy_gpu_available(LossyMethod method, int gpu, std::string* why) {
  if (method == LossyMethod::kQuant) {
    if (why) *why = "lossy quant runs on the CPU";
    return false;
  }
  return video_gpu_available(video_codec_of(method), gpu, why);
}

std::string lossy_encoder_name(LossyMethod method, int gpu) {
  return method == LossyMethod::kQuant ? "quant" : video_encoder_name(video_codec_of(method), gpu);
}

std::vector<uint8_t> lossy_encode(const Tensor& tensor, const LossyOptions& options, LossyReport* report) {
  const auto start = std::chrono::steady_clock::now();
  check_options(tensor, options);
  Header h;
  h.method = options.method;
  h.dtype = tensor.dtype();
  h.rotated = options.rotate;
  h.shape = tensor.shape();
  h.seed = options.seed;
  const View v = view_of(h.shape);
  std::vector<float> m = load_matrix(tensor, v);
  if (h.rotated) hadamard_rotate(m.data(), v.rows, v.padded, h.seed);

  Payload p;
  p.method = options.method;
  std::vector<uint8_t> frame;
  const double values = static_cast<double>(std::max<uint64_t>(v.values, 1));
  const double cells = static_cast<double>(std::max<uint64_t>(m.size(), 1));
  if (options.method == LossyMethod::kQuant) {
    // Aim the codes' entropy at the target less the frame's fixed bytes; correct by the
    // measured excess of the coded frame (entropy coders overshoot the entropy a little).
    const double fixed_bits = 8.0 * (128 + 8 * h.shape.size());
    // A tiny tensor whose fixed bytes take over half the budget overshoots the target
    // rather than lose all its values.
    const double budget = options.bits_per_value * values;
    const double floor_bits = budget / 2 / cells;
    double code_bits = std::max(budget - fixed_bits, budget / 2) / cells;
    for (int attempt = 0; attempt < 3; ++attempt) {
      p.quant = detail::quant_encode(m.data(), m.size(), code_bits, options.threads);
      frame = write_frame(h, p);
      const double excess = 8.0 * static_cast<double>(frame.size()) - options.bits_per_value * values;
      if (excess <= 0 || m.empty() || code_bits <= floor_bits) break;
      code_bits = std::max(floor_bits, code_bits - 1.02 * excess / cells);
    }
  } else {
    p.video = detail::video_payload_encode(m.data(), v.rows, v.padded, options, video_codec_of(options.method),
                                           v.values);
  }

  // Measure the error of what the decoder will produce.
  const Tensor decoded = decode_tensor(h, v, p, options.threads);
  const TensorDiff diff = tensor_diff(tensor, decoded);
  h.error.rel_rmse = diff.rel_error;
  h.error.sqnr_db = diff.sqnr_db;
  h.error.max_abs_error = diff.max_abs_error;
  frame = write_frame(h, p);
  if (report) {
    report->values = v.values;
    report->bytes = frame.size();
    report->bits_per_value = v.values ? 8.0 * static_cast<double>(frame.size()) / static_cast<double>(v.values) : 0;
    report->rel_rmse = h.error.rel_rmse;
    report->sqnr_db = h.error.sqnr_db;
    report->max_abs_error = h.error.max_abs_error;
    report->encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return frame;
}

Tensor lossy_decode(std::span<const uint8_t> frame) {
  Header h;
  View v;
  Payload p;
  read_frame(frame, h, v, p);
  return decode_tensor(h, v, p, 0);
}

void lossy_decode_stream(std::span<const uint8_t> frame, const LossySink& sink, int threads) {
  detail::lossy_decode_units(frame, sink, threads, kUnitCells);
}

void detail::lossy_decode_units(std::span<const uint8_t> frame, const LossySink& sink, int threads,
                                uint64_t unit_cells) {
  Header h;
  View v;
  Payload p;
  read_frame(frame, h, v, p);
  decode_payload(h, v, p, threads, sink, unit_cells);
}

LossyFrameInfo lossy_inspect(std::span<const uint8_t> frame) {
  Header h;
  View v;
  Payload p;
  read_frame(frame, h, v, p);
  LossyFrameInfo info;
  info.method = h.method;
  info.dtype = h.dtype;
  info.shape = h.shape;
  info.rotated = h.rotated;
  info.seed = h.seed;
  if (h.method != LossyMethod::kQuant) {
    info.crf = p.video.crf;
    info.bit_depth = p.video.bit_depth;
  }
  info.report = h.error;
  info.report.values = v.values;
  info.report.bytes = frame.size();
  info.report.bits_per_value = v.values ? 8.0 * static_cast<double>(frame.size()) / static_cast<double>(v.values) : 0;
  return info;
}

const char* lossy_method_name(LossyMethod method) {
  switch (method) {
    case LossyMethod::kVideoHevc: return "hevc";
    case LossyMethod::kVideoAv1: return "av1";
    case LossyMethod::kVideoH264: return "h264";
    case LossyMethod::kQuant: return "quant";
  }
  return "unknown";
}

LossyMethod lossy_method_parse(const std::string& text) {
  for (LossyMethod m : {LossyMethod::kVideoHevc, LossyMethod::kVideoAv1, LossyMethod::kVideoH264, LossyMethod::kQuant})
    if (text == lossy_method_name(m)) return m;
  throw usage_error("unknown lossy method '" + text + "' (hevc, av1, h264 or quant)");
}

}  // namespace tk::codec
