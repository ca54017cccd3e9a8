// tk_bench_quant [--rows R] [--cols C] [--seed S] [--schemes LIST] [--dist gauss|t4|both]
//                [--reps N] [--threads N] [--fast] [--scale-rule floor|ceil|search] [--json]
//                [--decode-rounds N] [--device N]
//
// Quantization schemes of tk/quant on seeded R x C f32 matrices (default 4096 x 4096):
// Gaussian N(0, 0.02^2) and Student-t with nu = 4 rescaled to the same RMS (0.02). For
// each scheme and matrix: SQNR in dB (10 log10 of signal over error energy), bits per
// weight from the stored bytes (all metadata included), quantize speed in MB/s of f32
// input and dequantize speed in GB/s of f32 output (medians of N timed runs after one
// warm-up, default 3), on N threads (default 1). Dequantize is timed two ways: streaming
// the whole matrix into one reused output (pre-faulted by the warm-up, so no page
// faults are timed), and "cache": a block of 16 rows decoded over and over into a
// buffer that stays in cache, as a consumer decoding row by row would. The same speeds per second of process
// CPU time are printed too: on a time-shared machine they stay close to what an idle
// one measures (cache and memory contention still show). Prints a table, or one JSON
// line per (scheme, matrix) with --json (the first line describes the machine). Exit
// status 2 for bad usage, 1 on failure.
//
// --decode-rounds N times only the cache-resident decoding, interleaved: each scheme's
// 16-row block is quantized once, then N rounds each time every (scheme, matrix) block
// in turn (64 decodes a window), so all of them share whatever load the machine has in
// each round. Before each window a short probe (independent integer adds) measures how
// much of the core the thread has: on a machine whose cores are shared with another
// tenant's hardware thread (SMT), the probe's rate drops when that sibling runs, and so
// does every decoder's. Prints per block the median, quartiles and best of the N
// windows, and the medians over the windows whose probe ran within 15% of the run's
// fastest ("core to itself": the per-thread speed of an unshared core) and over the
// others ("core shared"), with their counts.
//
// --device N quantizes and dequantizes on CUDA device N where the scheme has a GPU path
// (Scheme::gpu_path; the others run on the CPU, and the JSON says which): from host
// memory to host memory, the copies there and back timed with the kernels, as tquant
// runs them.
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tk/bench/report.h"
#include "tk/bench/timing.h"
#include "tk/core/error.h"
#include "tk/quant/scheme.h"

namespace {

struct Args {
  int64_t rows = 4096, cols = 4096;
  uint64_t seed = 42;
  std::vector<std::string> schemes = {"int8", "q8k", "q6k", "q5k", "q4k", "int4", "nf4", "q3k", "q2k",
                                      "fp8_e4m3", "fp8_e5m2", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3",
                                      "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4"};
  std::vector<std::string> dists = {"gauss", "t4"};
  int reps = 3;
  int threads = 1;
  bool fast = false;
  tk::quant::ScaleRule rule = tk::quant::ScaleRule::kDefault;
  bool json = false;
  int decode_rounds = 0;  // > 0: the interleaved cache-decoding mode
  int device = -1;        // --device N: that CUDA device
};

Args parse_args(int argc, char** argv) {
  Args a;
  CLI::App app{"Quantization schemes on seeded matrices: SQNR, bits per weight, speed", "tk_bench_quant"};
  std::string dist = "both", rule;
  app.add_option("--rows", a.rows)->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--cols", a.cols)->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--seed", a.seed)->check(CLI::Range(uint64_t{0}, uint64_t{INT64_MAX}));
  app.add_option("--schemes", a.schemes, "scheme specs, e.g. int8,q4k")->delimiter(',')->allow_extra_args(false);
  app.add_option("--dist", dist)->check(CLI::IsMember({"gauss", "t4", "both"}));
  app.add_option("--reps", a.reps)->check(CLI::Range(1, 100));
  app.add_option("--threads", a.threads)->check(CLI::Range(1, 1024));
  app.add_flag("--fast", a.fast, "the absmax scales");
  app.add_option("--scale-rule", rule)->check(CLI::IsMember({"floor", "ceil", "search"}));
  app.add_flag("--json", a.json, "one JSON line per result");
  app.add_option("--decode-rounds", a.decode_rounds, "interleaved cache-decoding rounds")->check(CLI::Range(1, 100000));
  app.add_option("--device", a.device, "CUDA device")->check(CLI::Range(-1, 1024));
  tk::bench::parse_or_exit(app, argc, argv);
  if (dist != "both") a.dists = {dist};
  if (rule == "floor") a.rule = tk::quant::ScaleRule::kFloor;
  if (rule == "ceil") a.rule = tk::quant::ScaleRule::kCeil;
  if (rule == "search") a.rule = tk::quant::ScaleRule::kSearch;
  return a;
}

// N(0, 0.02^2), or Student-t (nu = 4) scaled to the same RMS (the sample's, exactly).
std::vector<float> make_matrix(const std::string& dist, int64_t n, uint64_t seed) {
  constexpr double kSigma = 0.02;
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(n));
  if (dist == "gauss") {
    std::normal_distribution<double> g(0.0, kSigma);
    for (auto& x : v) x = g(rng);
  } else {
    std::student_t_distribution<double> t(4.0);
    double sum2 = 0;
    for (auto& x : v) {
      x = t(rng);
      sum2 += x * x;
    }
    const double k = kSigma / std::sqrt(sum2 / static_cast<double>(n));
    for (auto& x : v) x *= k;
  }
  return std::vector<float>(v.begin(), v.end());
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The cache-resident block: 16 rows (256 KB of f32 at 4096 columns), decoded 64 times a
// timing window.
constexpr int64_t kBlockRows = 16;
constexpr int kBlockRepeats = 64;
// --decode-rounds: a window has the core to itself when its probe ran within 15% of the
// run's fastest.
constexpr double kOwnCoreShare = 0.85;

tk::quant::QuantOptions quant_options(const Args& a) {
  tk::quant::QuantOptions o;
  o.fast = a.fast;
  o.scale_rule = a.rule;
  o.device = a.device;
  return o;
}

// The Gaussian matrix takes the seed, the Student-t one the next.
uint64_t matrix_seed(const Args& a, const std::string& dist) { return a.seed + (dist == "t4" ? 1 : 0); }

// Time `run` by tk::bench::measure and, alongside, by process CPU time; returns the
// median wall and CPU seconds of the timed runs.
std::pair<double, double> time_runs(const std::function<void()>& run, int reps) {
  tk::bench::TimingOptions t;
  t.warmup = 1;
  t.repetitions = reps;
  std::vector<double> cpu;
  const auto m = tk::bench::measure([&] {
    const double c0 = cpu_seconds();
    run();
    cpu.push_back(cpu_seconds() - c0);
  }, t);
  cpu.erase(cpu.begin());  // the warm-up
  return {m.summary.median, tk::bench::summarize(cpu).median};
}


void run_one(const Args& a, const std::string& spec, const std::string& dist, const std::vector<float>& x) {
  const auto scheme = tk::quant::make_scheme(spec);
  const tk::quant::QuantOptions o = quant_options(a);
  const tk::Shape shape{a.rows, a.cols};
  const auto bytes = static_cast<double>(x.size() * sizeof(float));
  tk::quant::Quantized q;
  const auto [q_wall, q_cpu] = time_runs([&] { q = scheme->quantize(x.data(), shape, o); }, a.reps);
  std::vector<float> y(x.size());
  const bool gpu = o.device >= 0 && scheme->gpu_path(o);
  const auto [d_wall, d_cpu] = time_runs([&] { scheme->dequantize_on(q, y.data(), gpu ? o.device : -1); }, a.reps);
  // Cache-resident decoding: 16 rows (256 KB of f32 at 4096 columns), 64 times a run.
  const int64_t block_rows = std::min(kBlockRows, a.rows);
  const tk::quant::Quantized qb = scheme->quantize(x.data(), tk::Shape{block_rows, a.cols}, o);
  std::vector<float> yb(static_cast<size_t>(block_rows * a.cols));
  const auto [c_wall, c_cpu] = time_runs([&] {
    for (int k = 0; k < kBlockRepeats; ++k) scheme->dequantize_on(qb, yb.data(), gpu ? o.device : -1);
  }, a.reps);
  const double block_bytes = static_cast<double>(yb.size() * sizeof(float)) * kBlockRepeats;
  const double dc_gbs = block_bytes / c_wall / 1e9, dc_cpu_gbs = block_bytes / c_cpu / 1e9;
  const auto err = tk::quant::measure_error(x.data(), y.data(), static_cast<int64_t>(x.size()), a.cols, nullptr);
  const double bpw = static_cast<double>(q.stored_bytes()) * 8.0 / static_cast<double>(x.size());
  const double q_mbs = bytes / q_wall / 1e6, dq_gbs = bytes / d_wall / 1e9;
  const double q_cpu_mbs = bytes / q_cpu / 1e6, dq_cpu_gbs = bytes / d_cpu / 1e9;
  if (a.json) {
    nlohmann::json j{{"scheme", spec}, {"dist", dist}, {"rows", a.rows}, {"cols", a.cols}, {"threads", a.threads},
                     {"bpw", bpw}, {"sqnr_db", err.sqnr_db}, {"rel_rmse", err.rel_rmse}, {"max_abs", err.max_abs},
                     {"quantize_mb_s", q_mbs}, {"dequantize_gb_s", dq_gbs}, {"quantize_cpu_mb_s", q_cpu_mbs},
                     {"dequantize_cpu_gb_s", dq_cpu_gbs}, {"dequantize_cache_gb_s", dc_gbs},
                     {"dequantize_cache_cpu_gb_s", dc_cpu_gbs}, {"runs", a.reps},
                     {"device", gpu ? "cuda:" + std::to_string(o.device) : "cpu"}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%-12s %-6s %8.4f %9.3f %12.1f %12.2f %12.1f %12.2f %12.2f %12.2f\n", spec.c_str(), dist.c_str(), bpw,
                err.sqnr_db, q_mbs, dq_gbs, q_cpu_mbs, dq_cpu_gbs, dc_gbs, dc_cpu_gbs);
  }
  std::fflush(stdout);
}


// Quartile q (0..4) of sorted v, by the nearest rank.
double quartile(const std::vector<double>& sorted, int q) {
  return sorted[static_cast<size_t>(q) * (sorted.size() - 1) / 4];
}

// Billions of integer adds a second by six independent chains: about 4 a cycle on a core
// the thread has to itself, fewer while an SMT sibling competes for the ALUs.
double add_probe() {
  uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
  constexpr int kIterations = 50000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kIterations; ++i) {
    a += 1, b += 1, c += 1, d += 1, e += 1, f += 1;
    asm volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  asm volatile("" : : "r"(a + b + c + d + e + f));
  return 6.0 * kIterations / s / 1e9;
}

// The median of v by the nearest rank (as quartile's), or 0 for an empty v.
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return quartile(v, 2);
}

void decode_rounds(const Args& a) {
  struct Block {
    std::string spec, dist;
    std::unique_ptr<tk::quant::Scheme> scheme;
    tk::quant::Quantized q;
    std::vector<float> y;
    double bpw = 0;
    std::vector<double> gbs, cpu_gbs, probe;
  };
  const int64_t rows = std::min(kBlockRows, a.rows);
  std::vector<Block> blocks;
  for (const auto& dist : a.dists) {
    const std::vector<float> x = make_matrix(dist, rows * a.cols, matrix_seed(a, dist));
    for (const auto& spec : a.schemes) {
      Block b{spec, dist, tk::quant::make_scheme(spec), {}, std::vector<float>(x.size()), 0, {}, {}, {}};
      b.q = b.scheme->quantize(x.data(), tk::Shape{rows, a.cols}, quant_options(a));
      b.bpw = static_cast<double>(b.q.stored_bytes()) * 8.0 / static_cast<double>(x.size());
      b.scheme->dequantize(b.q, b.y.data());  // warm-up: tables, caches, pages
      blocks.push_back(std::move(b));
    }
  }
  for (int round = 0; round < a.decode_rounds; ++round) {
    for (Block& b : blocks) {
      const double bytes = static_cast<double>(b.y.size() * sizeof(float)) * kBlockRepeats;
      b.probe.push_back(add_probe());
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      for (int k = 0; k < kBlockRepeats; ++k) b.scheme->dequantize(b.q, b.y.data());
      const double cpu = cpu_seconds() - c0;
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      b.gbs.push_back(bytes / wall / 1e9);
      b.cpu_gbs.push_back(bytes / cpu / 1e9);
    }
  }
  double fastest = 0;
  for (const Block& b : blocks) fastest = std::max(fastest, *std::max_element(b.probe.begin(), b.probe.end()));
  if (a.json) {
    std::printf("%s\n", nlohmann::json{{"add_probe_best_g_s", fastest}}.dump().c_str());
  } else {
    std::printf("add probe: best %.2f G adds/s; a window counts as 'core to itself' when its probe ran at >= %.2f\n",
                fastest, kOwnCoreShare * fastest);
    std::printf("%-12s %-6s %8s %8s %8s %8s %8s %8s %14s %14s\n", "scheme", "matrix", "bpw", "median", "p25", "p75",
                "best", "/cpu-s", "own core (n)", "shared (n)");
  }
  for (Block& b : blocks) {
    std::vector<double> own, shared;
    for (size_t w = 0; w < b.gbs.size(); ++w) (b.probe[w] >= kOwnCoreShare * fastest ? own : shared).push_back(b.gbs[w]);
    std::sort(b.gbs.begin(), b.gbs.end());
    std::sort(b.cpu_gbs.begin(), b.cpu_gbs.end());
    if (a.json) {
      const nlohmann::json j{{"scheme", b.spec}, {"dist", b.dist}, {"rows", rows}, {"cols", a.cols},
                             {"threads", a.threads}, {"bpw", b.bpw}, {"rounds", a.decode_rounds},
                             {"cache_gb_s_median", quartile(b.gbs, 2)}, {"cache_gb_s_p25", quartile(b.gbs, 1)},
                             {"cache_gb_s_p75", quartile(b.gbs, 3)}, {"cache_gb_s_best", b.gbs.back()},
                             {"cache_cpu_gb_s_median", quartile(b.cpu_gbs, 2)},
                             {"own_core_gb_s_median", median_of(own)}, {"own_core_windows", own.size()},
                             {"shared_core_gb_s_median", median_of(shared)}, {"shared_core_windows", shared.size()}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%-12s %-6s %8.4f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f (%3zu) %8.2f (%3zu)\n", b.spec.c_str(),
                  b.dist.c_str(), b.bpw, quartile(b.gbs, 2), quartile(b.gbs, 1), quartile(b.gbs, 3), b.gbs.back(),
                  quartile(b.cpu_gbs, 2), median_of(own), own.size(), median_of(shared), shared.size());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  omp_set_num_threads(a.threads);
  try {
    if (a.json) {
      std::printf("%s\n", nlohmann::json{{"machine", tk::bench::machine_json()}}.dump().c_str());
    }
    if (a.decode_rounds > 0) {
      decode_rounds(a);
      return 0;
    }
    if (!a.json) {
      std::printf("%-12s %-6s %8s %9s %12s %12s %12s %12s %12s %12s\n", "scheme", "matrix", "bpw", "SQNR dB",
                  "quant MB/s", "dequant GB/s", "q MB/cpu-s", "dq GB/cpu-s", "dq cache GB/s", "cache GB/cpu-s");
    }
    for (const auto& dist : a.dists) {
      const std::vector<float> x = make_matrix(dist, a.rows * a.cols, matrix_seed(a, dist));
      for (const auto& spec : a.schemes) run_one(a, spec, dist, x);
    }
  } catch (const tk::Error& e) {
    std::fprintf(stderr, "tk_bench_quant: error: %s%s%s\n", e.what(), e.where().empty() ? "" : " ", e.where().c_str());
    return e.kind() == tk::ErrorKind::kUsage ? 2 : 1;
  }
  return 0;
}
