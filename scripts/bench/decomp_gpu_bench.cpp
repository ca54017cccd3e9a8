// tk_bench_decomp_gpu [--size N] [--rank R] [--repeats K] [--sweeps S] OUT.json
//
// tdecomp's GPU paths against the CPU on a seeded N x N x N tensor (default 400, uniform
// in [-1, 1)), in f32 and f64, with ranks R,R,R (default 40): Tucker ST-HOSVD's time,
// HOOI's time per sweep ((time of S HOOI sweeps from ST-HOSVD - ST-HOSVD's time) /
// sweeps, default S = 5) and CP-ALS's time per iteration (rank R, 5 iterations, as
// CpResult reports it). Each of K rounds (default 3) runs every measurement
// once, CPU and GPU alternating, after one untimed warm-up of each (the GPU's creates its
// context and handles); the JSON at OUT gives every run, the medians and the ratio
// CPU / GPU, with the machine and the GPU described. Exit status 2 for bad usage, 1 on
// failure. Built only with the CUDA backend; scripts/gpu/tdecomp_bench.sh runs it.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tk/bench/machine.h"
#include "tk/bench/timing.h"
#include "tk/core/error.h"
#include "tk/decomp/cuda/cp.h"
#include "tk/decomp/cuda/tucker.h"
#include "tk/decomp/decomp.h"

namespace {

using tk::decomp::DenseView;
using tk::decomp::TuckerMethod;
using tk::decomp::TuckerOptions;
using Clock = std::chrono::steady_clock;

struct Args {
  int64_t size = 400;
  int64_t rank = 40;
  int repeats = 3;
  int sweeps = 5;
  std::string out;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) throw tk::usage_error(flag + " needs a value");
      return std::strtol(argv[++i], nullptr, 10);
    };
    if (flag == "--size") a.size = value();
    else if (flag == "--rank") a.rank = value();
    else if (flag == "--repeats") a.repeats = static_cast<int>(value());
    else if (flag == "--sweeps") a.sweeps = static_cast<int>(value());
    else if (a.out.empty() && flag[0] != '-') a.out = flag;
    else throw tk::usage_error("unknown argument '" + flag + "'");
  }
  if (a.out.empty() || a.size < 2 || a.rank < 1 || a.rank > a.size || a.repeats < 1 || a.sweeps < 1)
    throw tk::usage_error("usage: tk_bench_decomp_gpu [--size N] [--rank R] [--repeats K] [--sweeps S] OUT.json");
  return a;
}

// Uniform in [-1, 1) from a splitmix64 stream: fast enough for 64M values.
template <typename T> std::vector<T> seeded(int64_t n, uint64_t seed) {
  std::vector<T> x(static_cast<size_t>(n));
  for (auto& v : x) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    v = static_cast<T>(double(z >> 11) * 0x1.0p-52 - 1.0);
  }
  return x;
}

template <typename F> double wall_seconds(F&& run) {
  const Clock::time_point start = Clock::now();
  run();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

nlohmann::json compared(const std::vector<double>& cpu, const std::vector<double>& gpu) {
  const double c = tk::bench::summarize(cpu).median, g = tk::bench::summarize(gpu).median;
  return {{"cpu_seconds", cpu}, {"gpu_seconds", gpu}, {"cpu_median", c}, {"gpu_median", g},
          {"cpu_over_gpu", g > 0 ? c / g : 0.0}};
}

template <typename T> nlohmann::json bench_dtype(const Args& a, const char* name) {
  const std::vector<int64_t> shape = {a.size, a.size, a.size};
  const std::vector<T> data = seeded<T>(a.size * a.size * a.size, 42);
  const DenseView<T> x{data.data(), shape};
  TuckerOptions st;
  st.ranks = {a.rank, a.rank, a.rank};
  TuckerOptions hooi = st;
  hooi.method = TuckerMethod::kHooi;
  hooi.max_iters = a.sweeps;
  hooi.hooi_tol = 0;
  tk::decomp::CpOptions cp;
  cp.rank = static_cast<int>(a.rank);
  cp.max_iters = 5;
  cp.tol = 1e-12;
  tk::decomp::tucker(x, st);
  tk::decomp::cuda::tucker(x, st, 0);
  std::vector<double> st_cpu, st_gpu, sweep_cpu, sweep_gpu, cp_cpu, cp_gpu;
  std::vector<double> error_cpu, error_gpu;
  std::vector<int> sweeps_cpu, sweeps_gpu;  // HOOI stops early when a sweep lowers the fit
  for (int round = 0; round < a.repeats; ++round) {
    tk::decomp::TuckerResult r;
    const double c = wall_seconds([&] { r = tk::decomp::tucker(x, st); });
    st_cpu.push_back(c);
    error_cpu.push_back(r.rel_error);
    const double g = wall_seconds([&] { r = tk::decomp::cuda::tucker(x, st, 0); });
    st_gpu.push_back(g);
    error_gpu.push_back(r.rel_error);
    const double ch = wall_seconds([&] { r = tk::decomp::tucker(x, hooi); });
    sweep_cpu.push_back((ch - c) / std::max(1, r.iterations));
    sweeps_cpu.push_back(r.iterations);
    const double gh = wall_seconds([&] { r = tk::decomp::cuda::tucker(x, hooi, 0); });
    sweep_gpu.push_back((gh - g) / std::max(1, r.iterations));
    sweeps_gpu.push_back(r.iterations);
    cp_cpu.push_back(tk::decomp::cp_als(x, cp).seconds_per_iteration);
    cp_gpu.push_back(tk::decomp::cuda::cp_als(x, cp, 0).seconds_per_iteration);
  }
  return {{"dtype", name},
          {"tucker_sthosvd", compared(st_cpu, st_gpu)},
          {"tucker_hooi_per_sweep", compared(sweep_cpu, sweep_gpu)},
          {"tucker_hooi_sweeps_run", {{"cpu", sweeps_cpu}, {"gpu", sweeps_gpu}}},
          {"tucker_rel_error_cpu", error_cpu},
          {"tucker_rel_error_gpu", error_gpu},
          {"cp_als_per_iteration", compared(cp_cpu, cp_gpu)}};
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tk_bench_decomp_gpu: %s\n", e.what());
    return 2;
  }
  try {
    const tk::bench::MachineInfo m = tk::bench::describe_machine();
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) throw tk::unavailable("no CUDA device 0");
    nlohmann::json report = {
        {"benchmark", "tdecomp GPU vs CPU"},
        {"machine", {{"cpu", m.cpu_model}, {"omp_threads", m.omp_threads}, {"memory_bytes", m.memory_bytes}}},
        {"gpu", {{"name", prop.name}, {"memory_bytes", prop.totalGlobalMem}}},
        {"shape", {a.size, a.size, a.size}},
        {"ranks", {a.rank, a.rank, a.rank}},
        {"repeats", a.repeats},
        {"hooi_sweeps", a.sweeps},
        {"results", {bench_dtype<float>(a, "f32"), bench_dtype<double>(a, "f64")}}};
    std::ofstream(a.out) << report.dump(2) << "\n";
    std::printf("%s\n", report.dump(2).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tk_bench_decomp_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
