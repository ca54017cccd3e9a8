// tquant: uniform, microscaling and codebook quantization with budgeted mixed precision.
#include <fmt/format.h>

#include "cli/report.h"
#include "tk/quant/scheme.h"
#include "session.h"
#include "tquant.h"

int main(int argc, char** argv) {
  tk::cli::Tool tool("tquant",
                     "Quantize the float tensors of a model with one scheme or under a size budget; "
                     "'tquant dequant' restores dense tensors");
  tool.set_examples({
      {"tquant model.safetensors --scheme q4k -o q.safetensors", "One scheme for every float tensor"},
      {"tquant model.safetensors --budget 4.5 -o q.safetensors", "A scheme per tensor for the least error at 4.5 bits"},
      {"tquant model-f16.gguf --budget 4.5 -o model.gguf", "A GGUF for llama.cpp, keeping its key-value pairs"},
      {"tquant model/ --scheme int4 --group-size 128 --format compressed-tensors -o model-w4/",
       "A model directory that vLLM and transformers load (compressed-tensors)"},
      {"tquant dequant q.safetensors -o dense.safetensors", "Dense again, from the metadata alone"},
  });
  tk::tquant::QuantArgs q;
  CLI::App& app = tool.app();
  app.add_option("input", q.input, "Model file, sharded index or directory ('-': stdin, the default)")->type_name("IN");
  tool.add_output(app, q.output);
  tool.add_metadata_options(app);
  app.add_option("--format", q.format,
                 "Output format; gguf: ggml block types (the schemes with a ggml twin); "
                 "compressed-tensors: -o DIR, a model directory for vLLM and transformers (int2..int8, "
                 "fp8_e4m3, nvfp4); default: from OUT's extension")
      ->type_name("safetensors|hdf5|gguf|compressed-tensors");
  app.add_option("--scheme", q.scheme, "Quantize every selected float tensor with this scheme")->type_name("NAME");
  app.add_option("--group-size", q.group_size, "Values per group along a row (default: the scheme's)")
      ->type_name("G");
  app.add_option("--granularity", q.granularity, "Scale or codebook per tensor, channel (row) or group")
      ->type_name("tensor|channel|group");
  app.add_flag("--asym", q.asym, "Integer schemes: asymmetric, with a zero point");
  app.add_option("--scale-dtype", q.scale_dtype, "Storage of scales where the scheme lets you choose")
      ->type_name("f16|bf16|f32");
  app.add_option("--scale-rule", q.scale_rule, "MX shared exponent: floor (the spec's), ceil or search")
      ->type_name("floor|ceil|search");
  app.add_flag("--fast", q.fast, "Absmax scales, no error search");
  app.add_flag("--double-quant", q.double_quant, "nf4: quantize the block scales too");
  app.add_option("--outliers", q.outliers, "Codebook schemes: keep this percentage of values exactly in f16 (0.1%)")
      ->type_name("P%");
  app.add_option("--importance", q.importance, "Per-column error weights per tensor (safetensors or HDF5 vectors)")
      ->type_name("FILE");
  app.add_option("--budget", q.budget, "Average bits per weight over the quantized tensors, metadata included")
      ->type_name("BPW");
  app.add_option("--size", q.size, "Output file size instead of --budget: 600KB (SI), 600KiB (IEC), bytes")
      ->type_name("BYTES");
  app.add_option("--candidates", q.candidates, "Schemes the budget may choose from, comma-separated")
      ->type_name("LIST");
  app.add_option("--rule", q.rules, "Fix the scheme of tensors matching GLOB (repeatable, last match wins)")
      ->type_name("GLOB=SCHEME")
      ->allow_extra_args(false);
  app.add_option("--keep", q.keep, "Leave tensors matching GLOB unquantized (repeatable; adds to the defaults)")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  app.add_flag("--no-default-keep", q.no_default_keep,
               "Quantize what the default rules keep: scalars, 1-D, small tensors, norms, biases, embeddings");
  app.add_option("--min-elements", q.min_elements, "Keep tensors of fewer elements (default 4096)")->type_name("N");
  app.add_flag("--quantize-embeddings", q.quantize_embeddings, "Quantize embeddings too (kept by default; quantized by default in a GGUF output, as llama.cpp does)");
  app.add_flag("--keep-lm-head", q.keep_lm_head, "Keep the output head (lm_head, output.weight) unquantized");
  app.add_flag("--exact-budget", q.exact_budget,
               "Measure every candidate on every row (default: large tensors on a sample of rows, then "
               "whole where the sample does not decide)");
  app.add_flag("--explain", q.explain, "Print the default keep rules and the decision for every tensor");
  app.add_flag("--dry-run", q.dry_run, "Quantize and report, but write nothing");
  app.add_flag("--allow-nonfinite", q.allow_nonfinite, "Leave tensors holding NaN or Inf unquantized instead of failing");
  // The schemes come before the examples and exit codes that close every tool's help.
  app.footer(fmt::format("Schemes:\n  {}\n\n{}", fmt::join(tk::quant::scheme_names(), "\n  "), app.get_footer()));

  tk::tquant::DequantArgs d;
  CLI::App* dequant = tool.add_subcommand("dequant", "Restore dense tensors from a quantized file");
  dequant->add_option("input", d.input, "Quantized file ('-': stdin, the default)")->type_name("IN");
  tool.add_output(*dequant, d.output);
  tool.add_metadata_options(*dequant);
  dequant->add_option("--dtype", d.dtype, "dtype of restored tensors (default: each tensor's original)")
      ->type_name("f32|bf16|f16");
  dequant->add_option("--format", d.format, "Output format")->type_name("safetensors|hdf5|gguf");

  std::string svg;
  CLI::App* curve = tool.add_subcommand(
      "curve", "Compare budgeted allocations with single schemes on a model: bpw vs SQNR, JSON and SVG");
  curve->add_option("input", q.input, "Model file, sharded index or directory")->type_name("IN");
  curve->add_option("--candidates", q.candidates, "Schemes to compare, comma-separated")->type_name("LIST");
  curve->add_option("--svg", svg, "Write the chart (bpw vs SQNR) to this SVG file")
      ->type_name("FILE")
      ->check(tk::cli::report_path("SVG"));
  curve->add_option("--importance", q.importance, "Per-column error weights per tensor")->type_name("FILE");
  curve->add_option("--keep", q.keep, "Leave tensors matching GLOB out")->type_name("GLOB")->allow_extra_args(false);
  curve->add_flag("--no-default-keep", q.no_default_keep, "Do not keep by the default rules");
  curve->add_option("--min-elements", q.min_elements, "Keep tensors of fewer elements (default 4096)")->type_name("N");
  curve->add_option("--group-size", q.group_size, "Values per group along a row")->type_name("G");
  curve->add_flag("--allow-nonfinite", q.allow_nonfinite, "Leave tensors holding NaN or Inf out");

  tool.set_gpu_work(
      "quantizing and dequantizing " + tk::quant::gpu_schemes_text() +
      ", --budget's candidates among them included, and the error measurement of each, the same bytes as "
      "the CPU. The codebooks, iq4xs, the IQ2 and IQ3 twins and the trellis run on the CPU: named by --scheme or --rule "
      "under --device cuda they exit 5, as --budget candidates they run there");
  return tool.run(argc, argv, [&] {
    if (dequant->parsed()) return tk::tquant::run_dequant(tool, d);
    if (curve->parsed()) return tk::tquant::run_curve(tool, q, svg);
    return tk::tquant::run_quantize(tool, q);
  });
}
