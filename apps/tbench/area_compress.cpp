// tbench compress: the codecs of tcompress (lib/tk/codec) on one tensor each: lossless
// at zstd levels, BitX against a perturbed copy (a synthetic fine-tune), and lossy
// (rotation + quant, or a video codec) at target bits per value.
#include <cmath>
#include <cstring>

#include "tbench.h"
#include "tk/bench/synthetic.h"
#include "tk/codec/bitx.h"
#include "tk/codec/lossless.h"
#include "tk/codec/lossy.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"

namespace tk::tbench {
namespace {

using bench::Better;

void set_size_metrics(Result& r, uint64_t original_bytes, uint64_t stored_bytes, uint64_t values) {
  r.set("ratio", static_cast<double>(original_bytes) / static_cast<double>(stored_bytes), "x", Better::kHigher);
  r.set("bits_per_value", 8.0 * static_cast<double>(stored_bytes) / static_cast<double>(values), "bit",
        Better::kLower);
}

codec::LosslessOptions lossless_options(const Cell& cell) {
  codec::LosslessOptions o;
  o.level = static_cast<int>(param_number(cell, "level"));
  o.threads = cell.threads;
  return o;
}

void run_lossless(const Cell& cell, Result& r) {
  const Tensor& t = cell.input->data;
  std::span<const uint8_t> bytes(t.data(), t.nbytes());
  codec::LosslessOptions options = lossless_options(cell);
  std::vector<uint8_t> frame;
  auto enc = bench::measure([&] { frame = codec::lossless_compress(t.dtype(), bytes, options); }, cell.timing,
                            t.nbytes());
  std::vector<uint8_t> back(t.nbytes());
  auto dec = bench::measure([&] { codec::lossless_decompress(frame, back, cell.threads); }, cell.timing, t.nbytes());
  if (std::memcmp(back.data(), t.data(), t.nbytes()) != 0)
    throw internal_error("lossless round trip is not bit-exact", cell.input->name);
  set_size_metrics(r, t.nbytes(), frame.size(), t.numel());
  r.set_rate("compress_mb_s", enc, t.nbytes(), 1e6, "MB/s");
  r.set_rate("decompress_mb_s", dec, t.nbytes(), 1e6, "MB/s");
}

// A fine-tune of `base`: every value times (1 + perturb * N(0,1)), in the base's dtype.
Tensor perturbed(const Tensor& base, double perturb, uint64_t seed) {
  std::vector<float> x = values_f32(base);
  Tensor noise = bench::synthetic_tensor(bench::Distribution::kGaussian, {static_cast<int64_t>(x.size())}, seed);
  const float* g = noise.data_as<float>();
  for (size_t i = 0; i < x.size(); ++i) x[i] *= static_cast<float>(1 + perturb * g[i]);
  Tensor out = Tensor::empty(base.dtype(), base.shape());
  cast_array(DType::kF32, x.data(), base.dtype(), out.mutable_data(), x.size());
  return out;
}

void run_bitx(const Cell& cell, Result& r) {
  const Tensor& base = cell.input->data;
  Tensor target = perturbed(base, param_number(cell, "perturb"), 17);
  std::span<const uint8_t> b(base.data(), base.nbytes()), t(target.data(), target.nbytes());
  codec::LosslessOptions options = lossless_options(cell);
  std::vector<uint8_t> frame;
  auto enc = bench::measure([&] { frame = codec::bitx_encode(base.dtype(), t, b, options); }, cell.timing,
                            base.nbytes());
  std::vector<uint8_t> back(base.nbytes());
  auto dec = bench::measure([&] { codec::bitx_decode(frame, b, back, cell.threads); }, cell.timing, base.nbytes());
  if (std::memcmp(back.data(), target.data(), target.nbytes()) != 0)
    throw internal_error("BitX round trip is not bit-exact", cell.input->name);
  set_size_metrics(r, base.nbytes(), frame.size(), base.numel());
  r.set_rate("compress_mb_s", enc, base.nbytes(), 1e6, "MB/s");
  r.set_rate("decompress_mb_s", dec, base.nbytes(), 1e6, "MB/s");
}

void run_lossy(const Cell& cell, Result& r, codec::LossyMethod method) {
  std::string why;
  if (!codec::lossy_available(method, &why)) throw unavailable(why);
  const Tensor& t = cell.input->data;
  if (t.rank() < 2) throw usage_error("lossy coding takes tensors of rank 2 or more", cell.input->name);
  codec::LossyOptions options;
  options.method = method;
  options.bits_per_value = param_number(cell, "bits");
  options.threads = cell.threads;
  std::vector<uint8_t> frame;
  codec::LossyReport report;
  auto enc = bench::measure([&] { frame = codec::lossy_encode(t, options, &report); }, cell.timing, t.nbytes());
  Tensor back;
  auto dec = bench::measure([&] { back = codec::lossy_decode(frame); }, cell.timing, t.nbytes());
  set_size_metrics(r, t.nbytes(), frame.size(), t.numel());
  std::vector<float> x = values_f32(t), y = values_f32(back);
  set_error_metrics(r, x.data(), y.data(), x.size());
  r.set_rate("compress_mb_s", enc, t.nbytes(), 1e6, "MB/s");
  r.set_rate("decompress_mb_s", dec, t.nbytes(), 1e6, "MB/s");
}

}  // namespace

Area compress_area() {
  Area a;
  a.name = "compress";
  a.description = "Lossless, BitX and lossy compression: ratio, bits per value, MB/s both ways, error";
  a.methods = {
      {"lossless", {"level"}, "byte-grouped entropy coding (tcompress)"},
      {"bitx", {"level", "perturb"}, "a copy of the input times 1 + perturb * N(0,1) (a synthetic fine-tune), XOR-coded against the input"},
      {"lossy-quant", {"bits"}, "rotation + uniform quantization + entropy coding at `bits` per value"},
      {"lossy-hevc", {"bits"}, "HEVC (x265) intra frames at `bits` per value"},
      {"lossy-av1", {"bits"}, "AV1 (SVT-AV1) intra frames at `bits` per value"},
      {"lossy-h264", {"bits"}, "H.264 (x264) intra frames at `bits` per value"},
  };
  a.default_methods = {"lossless", "bitx", "lossy-quant"};
  a.params = {{"level", "3", "zstd level of the lossless streams", {}},
              {"perturb", "1e-3", "bitx: relative size of the fine-tune's change", {}},
              {"bits", "2,3,4,6", "lossy: target bits per value", {}}};
  a.default_shapes = {"512x512"};
  a.default_dists = {"gaussian"};
  a.run = [](const Cell& cell, Result& r) {
    if (cell.method == "lossless") return run_lossless(cell, r);
    if (cell.method == "bitx") return run_bitx(cell, r);
    run_lossy(cell, r, codec::lossy_method_parse(cell.method.substr(6)));
  };
  return a;
}

}  // namespace tk::tbench
