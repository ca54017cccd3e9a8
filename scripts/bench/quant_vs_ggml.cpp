// quant_vs_ggml ROUNDS: tk/quant against llama.cpp's quantizer (ggml) side by side, in one
// process, on the matrices of tk_bench_quant (4096 x 4096 f32, N(0, 0.02^2) seed 42 and
// Student-t nu = 4 at the same RMS seed 43, the same generator), one thread. For each
// pair (a ggml type and the tk scheme of its size): SQNR, quantize MB/s (median of three
// runs of the whole matrix), and decoding of a 16-row block 64 times a window, ROUNDS
// rounds with every decoder in turn, a probe of the core before each window (as
// tk_bench_quant --decode-rounds): medians with the core to itself and over all windows.
// Built and run by scripts/bench/quant_vs_ggml.sh.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include "ggml.h"
#include "tk/quant/scheme.h"

namespace {

constexpr int64_t kRows = 4096, kCols = 4096, kBlockRows = 16;
constexpr int kBlockRepeats = 64;

std::vector<float> make_matrix(bool gauss, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(n));
  if (gauss) {
    std::normal_distribution<double> g(0.0, 0.02);
    for (auto& x : v) x = g(rng);
  } else {
    std::student_t_distribution<double> t(4.0);
    double sum2 = 0;
    for (auto& x : v) {
      x = t(rng);
      sum2 += x * x;
    }
    const double k = 0.02 / std::sqrt(sum2 / static_cast<double>(n));
    for (auto& x : v) x *= k;
  }
  return std::vector<float>(v.begin(), v.end());
}

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

double sqnr_db(const std::vector<float>& x, const std::vector<float>& y) {
  double s = 0, e = 0;
  for (size_t i = 0; i < x.size(); ++i) s += double(x[i]) * x[i], e += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return 10 * std::log10(s / e);
}

double add_probe() {  // as tk_bench_quant's
  uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
  constexpr int kIterations = 50000;
  const double s = seconds([&] {
    for (int i = 0; i < kIterations; ++i) {
      a += 1, b += 1, c += 1, d += 1, e += 1, f += 1;
      asm volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f));
    }
  });
  asm volatile("" : : "r"(a + b + c + d + e + f));
  return 6.0 * kIterations / s / 1e9;
}

// One side of a pair: quantize (whole matrix or block) and decode.
struct Side {
  std::string name;
  std::function<double(const std::vector<float>&, int64_t rows, std::vector<float>& y)> round_trip;  // bpw
  std::function<void()> quantize_whole;
  std::function<void(int64_t rows)> prepare_block;  // quantize the block, keep it
  std::function<void(std::vector<float>& y)> decode_block;
  std::vector<double> gbs, probe;
};

Side ggml_side(ggml_type type, const std::vector<float>* x) {
  auto data = std::make_shared<std::vector<uint8_t>>();
  auto block = std::make_shared<std::vector<uint8_t>>();
  Side s;
  s.name = std::string("ggml:") + ggml_type_name(type);
  s.round_trip = [type, data](const std::vector<float>& in, int64_t rows, std::vector<float>& y) {
    data->resize(ggml_row_size(type, kCols) * rows);
    ggml_quantize_chunk(type, in.data(), data->data(), 0, rows, kCols, nullptr);
    ggml_get_type_traits(type)->to_float(data->data(), y.data(), rows * kCols);
    return 8.0 * static_cast<double>(data->size()) / static_cast<double>(rows * kCols);
  };
  s.quantize_whole = [type, data, x] { ggml_quantize_chunk(type, x->data(), data->data(), 0, kRows, kCols, nullptr); };
  s.prepare_block = [type, block, x](int64_t rows) {
    block->resize(ggml_row_size(type, kCols) * rows);
    ggml_quantize_chunk(type, x->data(), block->data(), 0, rows, kCols, nullptr);
  };
  s.decode_block = [type, block](std::vector<float>& y) {
    ggml_get_type_traits(type)->to_float(block->data(), y.data(), static_cast<int64_t>(y.size()));
  };
  return s;
}

Side tk_side(const std::string& spec, const std::vector<float>* x) {
  auto scheme = std::shared_ptr<tk::quant::Scheme>(tk::quant::make_scheme(spec));
  auto q = std::make_shared<tk::quant::Quantized>();
  auto block = std::make_shared<tk::quant::Quantized>();
  Side s;
  s.name = "tk:" + spec;
  s.round_trip = [scheme, q](const std::vector<float>& in, int64_t rows, std::vector<float>& y) {
    *q = scheme->quantize(in.data(), tk::Shape{rows, kCols}, tk::quant::QuantOptions{});
    scheme->dequantize(*q, y.data());
    return 8.0 * static_cast<double>(q->stored_bytes()) / static_cast<double>(rows * kCols);
  };
  s.quantize_whole = [scheme, q, x] {
    *q = scheme->quantize(x->data(), tk::Shape{kRows, kCols}, tk::quant::QuantOptions{});
  };
  s.prepare_block = [scheme, block, x](int64_t rows) {
    *block = scheme->quantize(x->data(), tk::Shape{rows, kCols}, tk::quant::QuantOptions{});
  };
  s.decode_block = [scheme, block](std::vector<float>& y) { scheme->dequantize(*block, y.data()); };
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
  omp_set_num_threads(1);
  const std::vector<std::pair<ggml_type, std::string>> pairs = {
      {GGML_TYPE_Q8_0, "int8"}, {GGML_TYPE_Q6_K, "q6k"},    {GGML_TYPE_Q5_K, "q5k"},   {GGML_TYPE_Q4_K, "q4k"},
      {GGML_TYPE_Q4_0, "int4"}, {GGML_TYPE_IQ4_NL, "nf4"},  {GGML_TYPE_Q3_K, "q3k"},   {GGML_TYPE_Q2_K, "q2k"},
      {GGML_TYPE_MXFP4, "mxfp4"}, {GGML_TYPE_NVFP4, "nvfp4"}};
  for (const bool gauss : {true, false}) {
    const std::vector<float> x = make_matrix(gauss, kRows * kCols, gauss ? 42 : 43);
    const char* dist = gauss ? "gauss" : "t4";
    std::vector<Side> sides;
    for (const auto& [type, spec] : pairs) {
      sides.push_back(ggml_side(type, &x));
      sides.push_back(tk_side(spec, &x));
    }
    std::vector<float> y(x.size()), yb(static_cast<size_t>(kBlockRows * kCols));
    std::printf("%-7s %-12s %8s %8s %10s\n", "matrix", "type", "bpw", "SQNR dB", "quant MB/s");
    for (Side& s : sides) {
      const double bpw = s.round_trip(x, kRows, y);
      std::vector<double> t;
      for (int r = 0; r < 3; ++r) t.push_back(seconds(s.quantize_whole));
      std::printf("%-7s %-12s %8.4f %8.2f %10.1f\n", dist, s.name.c_str(), bpw, sqnr_db(x, y),
                  static_cast<double>(x.size() * 4) / median(t) / 1e6);
      std::fflush(stdout);
      s.prepare_block(kBlockRows);
      s.decode_block(yb);  // warm-up
    }
    for (int r = 0; r < rounds; ++r) {
      for (Side& s : sides) {
        s.probe.push_back(add_probe());
        const double sec = seconds([&] {
          for (int k = 0; k < kBlockRepeats; ++k) s.decode_block(yb);
        });
        s.gbs.push_back(static_cast<double>(yb.size() * 4) * kBlockRepeats / sec / 1e9);
      }
    }
    double fastest = 0;
    for (const Side& s : sides) fastest = std::max(fastest, *std::max_element(s.probe.begin(), s.probe.end()));
    std::printf("%-7s %-12s %12s %6s %12s\n", "matrix", "type", "own core", "(n)", "all windows");
    for (const Side& s : sides) {
      std::vector<double> own;
      for (size_t w = 0; w < s.gbs.size(); ++w)
        if (s.probe[w] >= 0.85 * fastest) own.push_back(s.gbs[w]);
      std::printf("%-7s %-12s %12.2f %6zu %12.2f\n", dist, s.name.c_str(), median(own), own.size(), median(s.gbs));
    }
  }
  return 0;
}
