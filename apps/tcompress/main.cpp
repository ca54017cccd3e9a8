// tcompress: .tkz containers (lossless byte-grouped, BitX delta, lossy) and the model store.
#include "store.h"
#include "tcompress.h"
#include "tk/device/device.h"
#include "zstd_flags.h"

int main(int argc, char** argv) {
  tk::cli::Tool tool("tcompress",
                     "Compress tensor files into .tkz containers and restore them byte for byte; "
                     "'tcompress store' keeps many models deduplicated");
  tool.set_examples({
      {"tcompress model.safetensors", "Lossless, to model.safetensors.tkz"},
      {"tcompress -d model.safetensors.tkz", "Restore model.safetensors byte for byte"},
      {"tcompress -d -t 'layers.0.*' model.tkz -o some.safetensors", "Extract the matching tensors"},
      {"tcompress ft.safetensors --base base.safetensors -o ft.tkz", "BitX: XOR deltas against a base"},
      {"tcompress store add model.safetensors --store models/", "Add to a deduplicating store"},
  });
  tk::tcompress::CompressOptions o;
  CLI::App& app = tool.app();
  app.add_option("input", o.input, "File to compress, or .tkz container with -d/-l ('-': stdin, the default)")
      ->type_name("IN");
  tool.add_output(app, o.output);
  app.get_option("--output")
      ->description("Output file ('-': stdout). Default: IN.tkz; with -d, IN without .tkz; stdout for stdin, "
                    "with -c and for a tensor extracted with -d -t");
  tool.add_metadata_options(app);
  app.add_flag("-c,--stdout", o.to_stdout, "Write to stdout");
  app.add_flag("-k,--keep")->description("Keep the input file (always: tcompress never deletes it; accepted as in zstd)");
  app.add_flag("-d,--decompress", o.decompress,
               "Restore the original file; with -t GLOB or --exclude GLOB (repeatable), extract the matching "
               "tensors as safetensors, HDF5 or .npy");
  app.add_flag("-l,--list", o.list, "List the container's tensors, codecs and ratios");
  app.add_option("--level", o.level,
                 "zstd level of the coded streams (default 3); from 10, BitX deltas also try zstd on every plane")
      ->type_name("N")
      ->check(CLI::Range(1, 22));
  app.add_option("--chunk", o.chunk, "Bytes per independently coded chunk (default 1MiB)")->type_name("BYTES");
  app.add_option("--base", o.base,
                 "BitX: code tensors as XOR deltas against this safetensors model (needed again with -d)")
      ->type_name("BASE");
  app.add_option("--format", o.format, "Format of a tensor extracted with -d -t")
      ->type_name("safetensors|hdf5|npy");
  app.add_flag("--sha256", o.sha256,
               "Record the original's SHA-256 (what sha256sum prints) instead of its XXH3-128 (what xxh128sum "
               "prints): a serial pass at about 1.7 GB/s, in a version-1 container that earlier builds read too");
  app.add_flag("--container", o.container,
               "Always write a .tkz container, also where one zstd frame of the whole file is smaller (files "
               "without tensors, small safetensors files): keeps -d -t and per-tensor listings");
  app.add_flag("--strict", o.strict,
               "Refuse (exit 3) input that looks like a damaged HDF5 or safetensors file instead of keeping it "
               "as opaque bytes");
  app.add_option("--video", o.video, "Lossy: code float tensors with a video codec")
      ->type_name("hevc|av1|h264")
      ->check(CLI::IsMember({"hevc", "av1", "h264"}));
  app.add_option("--lossy", o.lossy, "Lossy without a video codec: rotation, rounding and entropy coding")
      ->type_name("quant")
      ->check(CLI::IsMember({"quant"}));
  app.add_option("--crf", o.crf, "Lossy video: constant rate factor")->type_name("N")->check(CLI::NonNegativeNumber);
  app.add_option("--bits-per-value", o.bits_per_value, "Lossy: target bits per value")
      ->type_name("B")
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-rotate", o.no_rotate, "Lossy: skip the randomized Hadamard rotation");
  app.add_option("--min-sqnr", o.min_sqnr,
                 "Lossy: a tensor coded below DB of SQNR falls back, from --video to --lossy quant at the same "
                 "bits per value, from quant to exact")
      ->type_name("DB")
      ->check(CLI::NonNegativeNumber);

  tk::tcompress::StoreCommand* store = tk::tcompress::add_store_command(tool);

  tool.set_gpu_work(
      "encoding --video through the GPU's hardware encoder, NVENC (hevc_nvenc, h264_nvenc, av1_nvenc where "
      "libavcodec has it), as LLM.265 does. Decoding, the lossless modes and --lossy quant run on the CPU");
  tool.set_argument_filter([&app](int n, char** args) { return tk::tcompress::translate_zstd_flags(app, n, args); });
  return tool.run(argc, argv, [&] {
    if (tool.options().device.kind == tk::device::Request::Kind::kCuda &&
        (tk::tcompress::store_parsed(store) || o.decompress || o.list || o.video.empty())) {
      throw tk::unavailable("tcompress runs on the GPU only to encode --video; --device cpu or auto runs the rest",
                            "--device " + tk::device::request_name(tool.options().device));
    }
    if (tk::tcompress::store_parsed(store)) return tk::tcompress::run_store(tool, store);
    if (o.decompress && o.list) throw tk::usage_error("-d and -l exclude each other");
    const bool extract = o.decompress && (!tool.options().tensors.empty() || !tool.options().exclude.empty());
    tk::tcompress::resolve_output(o, extract);
    if (!extract && tool.output_options().edits_metadata())
      throw tk::usage_error("--set-metadata, --drop-metadata and --no-provenance apply to a tensor extracted with -d -t");
    if (o.list) return tk::tcompress::run_list(tool, o);
    if (o.decompress) return tk::tcompress::run_decompress(tool, o);
    return tk::tcompress::run_compress(tool, o);
  });
}
