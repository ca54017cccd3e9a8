// tbench quant: every quantization scheme of tquant (lib/tk/quant) on one tensor each:
// exact bits per value (all parts counted), error, and speed both ways.
#include "tbench.h"
#include "tk/core/error.h"
#include "tk/quant/scheme.h"

namespace tk::tbench {
namespace {

using bench::Better;

void run_scheme(const Cell& cell, Result& r) {
  auto scheme = quant::make_scheme(cell.method);
  const Tensor& t = cell.input->data;
  std::vector<float> x = values_f32(t);
  quant::QuantOptions options;
  // Schemes whose blocks are fixed do not take group_size (Scheme::takes_group_size).
  if (cell.params.count("group_size")) options.group_size = static_cast<int64_t>(param_number(cell, "group_size"));
  options.fast = cell.params.at("fast") == "1";
  quant::Quantized q;
  auto enc = bench::measure([&] { q = scheme->quantize(x.data(), t.shape(), options); }, cell.timing, t.nbytes());
  std::vector<float> y(x.size());
  auto dec = bench::measure([&] { scheme->dequantize(q, y.data()); }, cell.timing, t.nbytes());
  uint64_t stored = q.stored_bytes();
  r.set("bits_per_value", 8.0 * static_cast<double>(stored) / static_cast<double>(t.numel()), "bit", Better::kLower);
  r.set("ratio", static_cast<double>(t.nbytes()) / static_cast<double>(stored), "x", Better::kHigher);
  set_error_metrics(r, x.data(), y.data(), x.size());
  r.set_rate("quantize_mb_s", enc, t.nbytes(), 1e6, "MB/s");
  r.set_rate("dequantize_gb_s", dec, t.nbytes(), 1e9, "GB/s");
}

}  // namespace

Area quant_area() {
  Area a;
  a.name = "quant";
  a.description = "Quantization schemes: bits per value, SQNR, relative RMSE, max error, speed both ways";
  auto takes = [](const std::string& name) {
    return quant::make_scheme(name)->takes_group_size() ? std::vector<std::string>{"group_size", "fast"}
                                                        : std::vector<std::string>{"fast"};
  };
  for (const char* name : {"int8", "int4", "nf4", "fp8_e4m3", "mxfp4", "nvfp4", "q4k", "kmeans:3"})
    a.methods.push_back({name, takes(name), quant::make_scheme(name)->description()});
  a.method_params = takes;
  a.default_methods = {"int8", "int4", "nf4", "mxfp4", "nvfp4"};
  a.description = "Quantization schemes: bits per value, SQNR, relative RMSE, max error, speed both ways "
                  "(--methods takes any tquant scheme spec, e.g. int3, q4k, kmeans:3, vq:4:8)";
  a.params = {{"group_size", "0", "elements per scale group (0: the scheme's default)", {}},
              {"fast", "0", "1: absmax scales without the error search", {"0", "1"}}};
  a.default_shapes = {"512x512"};
  a.default_dists = {"gaussian", "student-t"};
  // Any spec make_scheme takes ("int3", "vq:4:8"); it throws kUsage listing the valid ones.
  a.check_method = [](const std::string& name) { quant::make_scheme(name); };
  a.run = run_scheme;
  return a;
}

}  // namespace tk::tbench
