// tk_bench_lossy [FILE] [--rows R] [--cols C] [--sigma S] [--seed S] [--bits LIST]
//                [--methods LIST] [--min-values N] [--threads N] [--bit-depth D] [--machine]
//
// Compare the lossy methods of tk/codec/lossy.h at equal rates: for each method of LIST
// (default "quant,hevc,av1,h264"; unavailable ones are reported and skipped) and each
// target of LIST (default "2,3,4" bits per value), code every tensor and report the
// achieved bits per value, the SQNR of all tensors together (10 log10 of signal energy
// over error energy), the worst relative RMSE and max abs error, and the encode and
// decode speed in MB/s of f32 input (one timed run each: the video encoders are too
// slow to repeat on large data). The data are the float tensors of FILE with at least
// N values (default 65536), or an R x C f32 matrix (default 4096 x 4096) of N(0, S^2)
// (default S = 0.02) drawn with the seed (default 42). Every frame is decoded and the
// error recomputed against the report. Prints one JSON line per (method, rate); with
// --machine, a first line describes the machine. Exit status 2 for bad usage, 1 on
// failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tk/bench/report.h"
#include "tk/bench/timing.h"
#include "tk/codec/lossy.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/core/stats.h"
#include "tk/io/tensor_file.h"

namespace {

struct Args {
  std::string file;
  uint64_t rows = 4096, cols = 4096;
  double sigma = 0.02;
  uint64_t seed = 42;
  std::vector<double> bits = {2, 3, 4};
  std::vector<std::string> methods = {"quant", "hevc", "av1", "h264"};
  uint64_t min_values = 65536;
  int threads = 0;
  int bit_depth = 8;
  bool machine = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  CLI::App app{"Lossy codecs (quantizer, video) on a file's tensors or a seeded matrix", "tk_bench_lossy"};
  app.add_option("FILE", a.file, "a tensor file (default: a seeded matrix)");
  app.add_option("--rows", a.rows)->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--cols", a.cols)->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--sigma", a.sigma)->check(CLI::Range(1e-30, 1e30));
  app.add_option("--seed", a.seed)->check(CLI::Range(uint64_t{0}, uint64_t{1'000'000'000'000'000}));
  app.add_option("--bits", a.bits, "bits per value, e.g. 2,3,4")
      ->delimiter(',')->allow_extra_args(false)->check(CLI::Range(0.1, 16.0));
  app.add_option("--methods", a.methods, "quant, hevc, av1, h264")->delimiter(',')->allow_extra_args(false);
  app.add_option("--min-values", a.min_values)->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000'000'000}));
  app.add_option("--threads", a.threads)->check(CLI::Range(0, 1024));
  app.add_option("--bit-depth", a.bit_depth)->check(CLI::Range(8, 10));
  app.add_flag("--machine", a.machine, "print the machine block first");
  tk::bench::parse_or_exit(app, argc, argv);
  return a;
}

struct Input {
  std::string name;
  tk::Tensor tensor;
  double energy = 0;  // sum of squares
};

double energy_of(const tk::Tensor& t) {
  std::vector<double> v(t.numel());
  tk::convert_to_f64(t.dtype(), t.data(), 0, t.numel(), v.data());
  double e = 0;
  for (double x : v) e += x * x;
  return e;
}

std::vector<Input> load(const Args& args, std::string* data) {
  std::vector<Input> inputs;
  if (args.file.empty()) {
    tk::Tensor t = tk::Tensor::empty(tk::DType::kF32, {static_cast<int64_t>(args.rows), static_cast<int64_t>(args.cols)});
    std::mt19937_64 rng(args.seed);
    std::normal_distribution<float> normal(0.0f, static_cast<float>(args.sigma));
    float* p = t.mutable_data_as<float>();
    for (uint64_t i = 0; i < t.numel(); ++i) p[i] = normal(rng);
    inputs.push_back({"gaussian", t, 0});
    std::ostringstream d;
    d << "f32 N(0," << args.sigma << ") " << args.rows << "x" << args.cols << ", seed " << args.seed;
    *data = d.str();
  } else {
    auto reader = tk::io::open_reader(args.file);
    for (size_t i = 0; i < reader->tensors().size(); ++i) {
      const auto& info = reader->tensors()[i];
      if (!tk::dtype_is_float(info.dtype) || tk::shape_numel(info.shape) < args.min_values) continue;
      inputs.push_back({info.name, reader->read(i).clone(), 0});
    }
    *data = args.file;
  }
  for (Input& in : inputs) in.energy = energy_of(in.tensor);
  return inputs;
}


}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    if (args.machine)
      std::printf("%s\n", nlohmann::json{{"machine", tk::bench::machine_json()}}.dump().c_str());
    std::string data;
    const std::vector<Input> inputs = load(args, &data);
    if (inputs.empty()) throw tk::invalid_input("no float tensor with at least " + std::to_string(args.min_values) +
                                                " values", args.file);
    uint64_t values = 0;
    double energy = 0;
    for (const Input& in : inputs) values += in.tensor.numel(), energy += in.energy;

    for (const std::string& name : args.methods) {
      const tk::codec::LossyMethod method = tk::codec::lossy_method_parse(name);
      std::string why;
      if (!tk::codec::lossy_available(method, &why)) {
        std::printf("%s\n", nlohmann::json{{"bench", "lossy"}, {"method", name}, {"skipped", why}}.dump().c_str());
        continue;
      }
      for (double bits : args.bits) {
        tk::codec::LossyOptions options;
        options.method = method;
        options.bits_per_value = bits;
        options.seed = args.seed;
        options.threads = args.threads;
        options.bit_depth = args.bit_depth;
        uint64_t bytes = 0;
        double error_energy = 0, worst_rel = 0, max_abs = 0, encode_s = 0, decode_s = 0;
        std::vector<int> crfs;
        for (const Input& in : inputs) {
          tk::codec::LossyReport report;
          double start = tk::bench::monotonic_seconds();
          const std::vector<uint8_t> frame = tk::codec::lossy_encode(in.tensor, options, &report);
          encode_s += tk::bench::monotonic_seconds() - start;
          start = tk::bench::monotonic_seconds();
          const tk::Tensor back = tk::codec::lossy_decode(frame);
          decode_s += tk::bench::monotonic_seconds() - start;
          const tk::TensorDiff diff = tk::tensor_diff(in.tensor, back);
          if (std::fabs(diff.rel_error - report.rel_rmse) > 1e-9 * std::max(1.0, report.rel_rmse))
            throw tk::internal_error("decoded error differs from the report", in.name);
          bytes += frame.size();
          error_energy += diff.rel_error * diff.rel_error * in.energy;
          worst_rel = std::max(worst_rel, diff.rel_error);
          max_abs = std::max(max_abs, diff.max_abs_error);
        }
        const double mb = 4.0 * static_cast<double>(values) / 1e6;
        const nlohmann::json line = {
            {"bench", "lossy"},
            {"method", name},
            {"data", data},
            {"tensors", inputs.size()},
            {"values", values},
            {"target_bits", bits},
            {"bits_per_value", 8.0 * static_cast<double>(bytes) / static_cast<double>(values)},
            {"bytes", bytes},
            {"sqnr_db", error_energy > 0 ? 10 * std::log10(energy / error_energy) : INFINITY},
            {"worst_rel_rmse", worst_rel},
            {"max_abs_error", max_abs},
            {"encode_s", encode_s},
            {"decode_s", decode_s},
            {"encode_mb_per_s", mb / encode_s},
            {"decode_mb_per_s", mb / decode_s},
            {"bit_depth", method == tk::codec::LossyMethod::kQuant ? 0 : args.bit_depth}};
        std::printf("%s\n", line.dump().c_str());
        std::fflush(stdout);
      }
    }
  } catch (const tk::Error& e) {
    std::fprintf(stderr, "tk_bench_lossy: error: %s%s%s\n", e.what(), e.where().empty() ? "" : " (",
                 e.where().empty() ? "" : (e.where() + ")").c_str());
    return 1;
  }
  return 0;
}
