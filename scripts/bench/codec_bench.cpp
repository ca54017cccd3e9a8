// tk_bench_codec [FILE] [--values N] [--seed S] [--reps N] [--warmup N] [--threads LIST]
//                [--chunk BYTES] [--level L] [--machine]
//
// Measure the lossless codec (tk/codec/lossless.h): ratio, compression and decompression
// speed (decoded bytes per second, median of the repetitions) for each thread count of
// LIST (default "1,2"). The data are the tensors of FILE (safetensors or any supported
// format), each coded as its own frame, or, without FILE, N bf16 values (default 50M)
// drawn from N(0, 0.02) with seed S (default 42). Every frame is checked to decode to
// its input once before timing. Prints one JSON line per measurement (with --machine, a
// first line describes the machine). Besides wall-clock speed, each line gives the speed
// per CPU-second of the process (cpu_mb_per_s, from the median CPU time of a run): on a
// machine shared with other work that is the steadier per-core figure. Exit status 2
// for bad usage, 1 on failure.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tk/bench/report.h"
#include "tk/bench/timing.h"
#include "tk/codec/lossless.h"
#include "tk/core/buffer.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/io/tensor_file.h"

namespace {

struct Args {
  std::string file;
  uint64_t values = 50'000'000;
  uint64_t seed = 42;
  int reps = 5;
  int warmup = 1;
  std::vector<int> threads = {1, 2};
  uint32_t chunk = 1u << 20;
  int level = 3;
  bool machine = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  CLI::App app{"The lossless codec in memory on a file's tensors or seeded values", "tk_bench_codec"};
  app.add_option("FILE", a.file, "a tensor file (default: seeded values)");
  app.add_option("--values", a.values, "seeded values")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 34));
  app.add_option("--seed", a.seed)->check(CLI::Range(uint64_t{0}, uint64_t{1} << 62));
  app.add_option("--reps", a.reps)->check(CLI::Range(1, 1000));
  app.add_option("--warmup", a.warmup)->check(CLI::Range(0, 1000));
  app.add_option("--threads", a.threads, "thread counts, e.g. 1,2")
      ->delimiter(',')->allow_extra_args(false)->check(CLI::Range(1, 1024));
  app.add_option("--chunk", a.chunk, "bytes per chunk")->check(CLI::Range(1U, 1U << 30));
  app.add_option("--level", a.level)->check(CLI::Range(-100, 100));
  app.add_flag("--machine", a.machine, "print the machine block first");
  tk::bench::parse_or_exit(app, argc, argv);
  return a;
}

struct Input {
  tk::DType dtype;
  tk::Buffer bytes;
};

// The seeded synthetic tensor: bf16 values of N(0, 0.02).
Input synthetic(uint64_t values, uint64_t seed) {
  tk::Buffer b = tk::Buffer::allocate(values * 2);
  uint8_t* p = b.mutable_data();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (uint64_t i = 0; i < values; ++i) {
    const uint16_t v = tk::f32_to_bf16(normal(rng));
    std::memcpy(p + 2 * i, &v, 2);
  }
  return {tk::DType::kBF16, b};
}

std::vector<Input> read_file(const std::string& path) {
  auto reader = tk::io::open_reader(path);
  std::vector<Input> inputs;
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    // A private copy: the timing should not include page faults on the file's mapping.
    tk::Tensor t = reader->read(i);
    tk::Buffer owned = tk::Buffer::allocate(t.nbytes());
    if (t.nbytes()) std::memcpy(owned.mutable_data(), t.data(), t.nbytes());
    inputs.push_back({t.dtype(), owned});
  }
  return inputs;
}


volatile uint64_t g_sink = 0;

double process_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Run `fn` and append the process CPU time it took to `cpu`.
template <typename Fn> void timed_cpu(std::vector<double>& cpu, Fn&& fn) {
  const double start = process_cpu_seconds();
  fn();
  cpu.push_back(process_cpu_seconds() - start);
}

// Median of the last `reps` entries (the warm-up runs come first).
double median_of_last(std::vector<double> v, int reps) {
  v.erase(v.begin(), v.end() - std::min<size_t>(v.size(), static_cast<size_t>(reps)));
  return tk::bench::summarize(v).median;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    if (args.machine)
      std::printf("%s\n", nlohmann::json{{"machine", tk::bench::machine_json()}}.dump().c_str());
    const std::vector<Input> inputs = args.file.empty() ? std::vector<Input>{synthetic(args.values, args.seed)}
                                                        : read_file(args.file);
    uint64_t raw_bytes = 0;
    for (const Input& in : inputs) raw_bytes += in.bytes.size();

    tk::bench::TimingOptions timing;
    timing.warmup = args.warmup;
    timing.repetitions = args.reps;
    const std::string data = args.file.empty() ? "bf16 N(0,0.02) x " + std::to_string(args.values) + ", seed " +
                                                     std::to_string(args.seed)
                                               : args.file;
    for (int threads : args.threads) {
      tk::codec::LosslessOptions options;
      options.level = args.level;
      options.chunk_bytes = args.chunk;
      options.threads = threads;
      std::vector<std::vector<uint8_t>> frames(inputs.size());
      auto compress_all = [&] {
        for (size_t i = 0; i < inputs.size(); ++i)
          frames[i] = tk::codec::lossless_compress(inputs[i].dtype, {inputs[i].bytes.data(), inputs[i].bytes.size()},
                                                   options);
      };
      auto drop_frames = [&] {
        for (auto& f : frames) std::vector<uint8_t>().swap(f);
      };
      std::vector<double> compress_cpu, decompress_cpu;
      const tk::bench::Measurement c = tk::bench::measure([&] { timed_cpu(compress_cpu, compress_all); }, timing,
                                                          raw_bytes, drop_frames);
      compress_all();
      uint64_t frame_bytes = 0;
      for (const auto& f : frames) frame_bytes += f.size();

      std::vector<tk::Buffer> outs;
      for (const Input& in : inputs) outs.push_back(tk::Buffer::allocate(in.bytes.size()));
      for (size_t i = 0; i < inputs.size(); ++i) {
        tk::codec::lossless_decompress(frames[i], {outs[i].mutable_data(), outs[i].size()}, threads);
        if (outs[i].size() && std::memcmp(outs[i].data(), inputs[i].bytes.data(), outs[i].size()) != 0)
          throw tk::internal_error("round trip differs", "tensor " + std::to_string(i));
      }
      auto decompress_all = [&] {
        for (size_t i = 0; i < inputs.size(); ++i)
          tk::codec::lossless_decompress(frames[i], {outs[i].mutable_data(), outs[i].size()}, threads);
        g_sink = g_sink + (outs.empty() || outs[0].empty() ? 0 : outs[0].data()[0]);
      };
      const tk::bench::Measurement d =
          tk::bench::measure([&] { timed_cpu(decompress_cpu, decompress_all); }, timing, raw_bytes);

      struct Case {
        const char* name;
        const tk::bench::Measurement* m;
        double cpu_s;
      };
      for (const Case& k : {Case{"compress", &c, median_of_last(compress_cpu, args.reps)},
                            Case{"decompress", &d, median_of_last(decompress_cpu, args.reps)}}) {
        const tk::bench::Measurement* m = k.m;
        const nlohmann::json line = {{"bench", "codec"},
                                     {"codec", "tk_lossless"},
                                     {"case", k.name},
                                     {"data", data},
                                     {"threads", threads},
                                     {"chunk_bytes", args.chunk},
                                     {"level", args.level},
                                     {"bytes", raw_bytes},
                                     {"frame_bytes", frame_bytes},
                                     {"ratio", frame_bytes ? static_cast<double>(raw_bytes) / frame_bytes : 0.0},
                                     {"runs", m->summary.runs},
                                     {"median_s", m->summary.median},
                                     {"min_s", m->summary.min},
                                     {"max_s", m->summary.max},
                                     {"mb_per_s", m->gb_per_s() * 1000},
                                     {"cpu_s", k.cpu_s},
                                     {"cpu_mb_per_s", k.cpu_s > 0 ? raw_bytes / k.cpu_s / 1e6 : 0.0}};
        std::printf("%s\n", line.dump().c_str());
      }
      std::fflush(stdout);
    }
  } catch (const tk::Error& e) {
    std::fprintf(stderr, "tk_bench_codec: error: %s%s%s\n", e.what(), e.where().empty() ? "" : " (",
                 e.where().empty() ? "" : (e.where() + ")").c_str());
    return 1;
  }
  return 0;
}
