// tk_bench_io FILE [--reps N] [--warmup N] [--machine]
//
// Time three ways of getting at every tensor of a safetensors (or any supported) file,
// each including the open and header parse, and print one JSON line per measurement:
//   load_copy   read every tensor into owned memory (what safetensors.numpy.load_file does)
//   load_mmap   map the file and touch every page of every tensor (zero-copy)
//   stats       tensor_stats over every tensor of the mapped file
// With --machine, a first line describes the machine. Exit status 2 for bad usage, 1
// when the file cannot be read.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tk/bench/report.h"
#include "tk/bench/timing.h"
#include "tk/core/error.h"
#include "tk/core/stats.h"
#include "tk/io/tensor_file.h"

namespace {

constexpr uint64_t kPageBytes = 4096;

struct Args {
  std::string file;
  int reps = 5;
  int warmup = 1;
  bool machine = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  CLI::App app{"Load a tensor file three ways and time each", "tk_bench_io"};
  app.add_option("FILE", a.file, "the tensor file")->required();
  app.add_option("--reps", a.reps, "timed runs")->check(CLI::Range(1, 1'000'000));
  app.add_option("--warmup", a.warmup, "untimed runs first")->check(CLI::Range(0, 1'000'000));
  app.add_flag("--machine", a.machine, "print the machine block first");
  tk::bench::parse_or_exit(app, argc, argv);
  return a;
}

// Defeats dead-code elimination of the page touches and statistics.
volatile uint64_t g_sink = 0;

uint64_t load_copy(const std::string& file) {
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  auto reader = tk::io::open_reader(file, options);
  std::vector<tk::Tensor> tensors;
  tensors.reserve(reader->tensors().size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    tensors.push_back(reader->read(i));
    bytes += tensors.back().nbytes();
  }
  return bytes;  // the tensors are released here, like a dict going out of scope
}

uint64_t load_mmap(const std::string& file) {
  auto reader = tk::io::open_reader(file);
  uint64_t bytes = 0, sum = 0;
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    tk::Tensor t = reader->read(i);
    const uint8_t* p = t.data();
    for (uint64_t k = 0; k < t.nbytes(); k += kPageBytes) sum += p[k];
    bytes += t.nbytes();
  }
  g_sink = g_sink + sum;
  return bytes;
}

uint64_t stats_all(const std::string& file) {
  auto reader = tk::io::open_reader(file);
  uint64_t bytes = 0, finite = 0;
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    tk::Tensor t = reader->read(i);
    finite += tk::tensor_stats(t).finite;
    bytes += t.nbytes();
  }
  g_sink = g_sink + finite;
  return bytes;
}


}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);
  try {
    if (args.machine) std::printf("%s\n", nlohmann::json{{"machine", tk::bench::machine_json()}}.dump().c_str());
    tk::bench::TimingOptions timing;
    timing.warmup = args.warmup;
    timing.repetitions = args.reps;
    struct Case {
      const char* name;
      uint64_t (*run)(const std::string&);
    };
    for (const Case& c : {Case{"load_copy", load_copy}, Case{"load_mmap", load_mmap}, Case{"stats", stats_all}}) {
      uint64_t bytes = 0;
      tk::bench::Measurement m = tk::bench::measure([&] { bytes = c.run(args.file); }, timing);
      m.bytes = bytes;
      nlohmann::json line = {{"bench", "io"},
                             {"case", c.name},
                             {"bytes", m.bytes},
                             {"runs", m.summary.runs},
                             {"median_s", m.summary.median},
                             {"min_s", m.summary.min},
                             {"max_s", m.summary.max},
                             {"gb_per_s", m.gb_per_s()}};
      std::printf("%s\n", line.dump().c_str());
      std::fflush(stdout);
    }
  } catch (const tk::Error& e) {
    std::fprintf(stderr, "tk_bench_io: error: %s%s%s\n", e.what(), e.where().empty() ? "" : " (",
                 e.where().empty() ? "" : (e.where() + ")").c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tk_bench_io: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
