// tbench: speed, ratio and error of tensorkit's areas (quant, compress, decomp, io,
// ckpt) on the user's tensors and machine, as a matrix of methods x parameters x inputs;
// and `compare` of two result files. The result form is docs/TBENCH.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/tool.h"
#include "tk/bench/regression.h"
#include "tk/bench/timing.h"
#include "tk/core/tensor.h"

namespace tk::tbench {

inline constexpr const char* kSchema = "tensorkit.tbench/1";

// ---- results ----

struct Metric {
  double value = 0;  // the median for timed metrics; NaN: not measured or not finite
  std::string unit;
  bench::Better better = bench::Better::kNone;
  bool timed = false;  // min, max and runs are meaningful
  double min = 0, max = 0;
  int runs = 0;
};

using Params = std::map<std::string, std::string>;

struct Result {
  std::string area, method, implementation = "tensorkit", input;
  Params params;
  std::string status = "ok";  // ok | skipped | failed
  std::string note;
  std::vector<std::pair<std::string, Metric>> metrics;  // in report order

  void set(const std::string& name, double value, const char* unit, bench::Better better);
  // A throughput metric from timed runs over `bytes` of input: median, min, max in
  // `scale` bytes per second (1e6: MB/s, 1e9: GB/s).
  void set_rate(const std::string& name, const bench::Measurement& m, uint64_t bytes, double scale,
                const char* unit);
  // A time metric from timed runs, in seconds times `scale` (1e3: ms).
  void set_time(const std::string& name, const bench::Measurement& m, double scale, const char* unit);
  const Metric* find(const std::string& name) const;
};

// A benchmark input: one tensor, synthetic or from a file.
struct Input {
  std::string name;    // "gaussian-512x512", "model.safetensors:w1"
  std::string source;  // "synthetic" | "file"
  std::string dist;    // synthetic: distribution name
  std::string file, tensor;
  Tensor data;         // as given (file dtype, or F32 for synthetic)
};

struct Report {
  std::string area;
  std::vector<std::string> command;
  nlohmann::json machine;
  nlohmann::json settings;
  std::vector<Input> inputs;
  std::vector<Result> results;
};

// ---- the run ----

struct RunOptions {
  std::string area;
  std::vector<std::string> inputs;
  std::vector<std::string> methods;       // --methods a,b (empty: the area's defaults)
  std::vector<std::string> params;        // --params key=v1,v2 (repeatable)
  std::vector<std::string> shapes;        // --shape 512x512 (repeatable)
  std::vector<std::string> dists;         // --dist gaussian,student-t
  std::string dir;                        // io/ckpt: directory to measure
  int warmup = 1;
  int reps = 3;
  double max_seconds = 0;                 // 0: unbounded
  std::string csv, svg;                   // output paths ("-" for stdout csv)
};

// What a method of an area is run with: its parameters (only those it takes), the input
// and the timing options; it fills the result's metrics.
struct Cell {
  std::string method;
  Params params;
  const Input* input = nullptr;
  bench::TimingOptions timing;
  std::string dir;  // io/ckpt scratch directory
  int threads = 0;  // -j (0: OpenMP default)
};

struct ParamSpec {
  std::string name;
  std::string defaults;     // comma-separated default values
  std::string description;
  std::vector<std::string> choices;  // the values allowed; empty: any (numbers are checked by the area)
};

struct MethodSpec {
  std::string name;
  std::vector<std::string> params;  // names of the ParamSpecs it takes
  std::string description;
};

struct Area {
  std::string name;
  std::string description;
  std::vector<MethodSpec> methods;           // every method offered
  std::vector<std::string> default_methods;  // run when --methods is absent
  std::vector<ParamSpec> params;
  std::vector<std::string> default_shapes;   // synthetic inputs
  std::vector<std::string> default_dists;
  bool takes_inputs = true;                  // io/ckpt with inputs use them as data
  // Check a method name beyond the table (quant: any spec make_scheme accepts); throws
  // kUsage. Null: only the table's names.
  std::function<void(const std::string&)> check_method;
  // The parameters a method beyond the table takes (quant: by its scheme). Null: those of
  // the table's first method.
  std::function<std::vector<std::string>(const std::string&)> method_params;
  std::function<void(const Cell&, Result&)> run;
};

Area quant_area();
Area compress_area();
Area decomp_area();
Area io_area();
Area ckpt_area();
const Area& find_area(const std::string& name);

// ---- pieces shared by the areas ----

// The input's values as f32 / f64 (converted from its dtype).
std::vector<float> values_f32(const Tensor& t);
std::vector<double> values_f64(const Tensor& t);
// Parameter `name` of a cell as a number; throws kUsage naming it when malformed.
double param_number(const Cell& cell, const std::string& name);
// A fresh scratch directory under `dir` (removed by the caller).
std::string make_scratch_dir(const std::string& dir, const std::string& area);

// Error metrics of an approximation y of x: sqnr_db, rel_rmse, max_abs_error.
void set_error_metrics(Result& r, const float* x, const float* y, uint64_t n);

// ---- commands ----

// The methods, parameters and synthetic inputs of an area, for its --help.
std::string area_help(const Area& area);
int run_area(cli::Tool& tool, const RunOptions& options);

struct CompareOptions {
  std::string old_path, new_path;
  std::string threshold = "5%";
};
int run_compare(cli::Tool& tool, const CompareOptions& options);

// ---- output ----

nlohmann::json report_json(const Report& report);
std::string report_table(const Report& report);
std::string report_csv(const Report& report);
// Rate-distortion curves (bits per value against SQNR, one per method) when results
// carry both, and throughput bars per cell, stacked in one SVG document.
std::string report_svg(const Report& report);

}  // namespace tk::tbench
