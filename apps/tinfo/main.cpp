// tinfo: list tensors, dtypes, shapes, metadata and statistics; compare two files.
#include "tinfo.h"

int main(int argc, char** argv) {
  tk::cli::Tool tool("tinfo",
                     "List the tensors of safetensors, HDF5, .npy, .npz and PyTorch files, containers, checkpoint "
                     "steps and stores, or compare two files");
  tool.set_examples({
      {"tinfo model.safetensors", "Tensors, dtypes, shapes and bytes"},
      {"tinfo --stats field.h5", "Add min, max, mean, std, absmax and zero/NaN/Inf counts"},
      {"tinfo model.tkz", "A container's tensors, with codec, stored bytes and ratio"},
      {"tinfo diff a.safetensors b.h5 --rtol 1e-2", "Compare tensor by tensor; exit 1 when they differ"},
      {"tinfo q.safetensors", "A quantized file's tensors, with scheme, stored bytes and bits per value"},
      {"tinfo diff model.safetensors q.safetensors --rtol 0.1", "A quantized file against its source, dequantized"},
      {"tinfo ckpt/", "A checkpoint directory's steps; 'tinfo ckpt/step-100' lists one step's tensors"},
      {"tinfo store/", "A model store's files, with stored bytes and ratios"},
  });
  tk::tinfo::ListOptions list;
  tool.app()
      .add_option("files", list.files,
                  "Tensor files, sharded indexes, model directories, checkpoint directories or stores ('-': stdin, "
                  "the default)")
      ->type_name("FILE...");
  tool.app().add_flag("--metadata", list.metadata, "Print each file's metadata after its table");
  tool.app().add_flag("--stats", list.stats, "Add columns min max mean std absmax zeros nan inf (reads the data)");
  tool.app().add_flag("--parts", list.parts,
                      "List a quantized file's stored tensors (NAME.codes, NAME.scales, ...), not the tensors they "
                      "stand for");

  tk::tinfo::DiffOptions diff;
  CLI::App* diff_cmd = tool.add_subcommand(
      "diff", "Compare two files tensor by tensor; exit 0 when they match, 1 when they differ (with -q: one line when they differ, nothing when they match)");
  diff_cmd->add_option("A", diff.a, "Reference file")->required();
  diff_cmd->add_option("B", diff.b, "File to compare with A")->required();
  diff_cmd->add_option_function<double>("--tolerance", [&diff](double t) { diff.tolerance = t; },
                                        "Accept tensors whose max absolute error is at most T (default: bit-equal only)")
      ->type_name("T")
      ->check(CLI::NonNegativeNumber);
  diff_cmd->add_option_function<double>("--rtol", [&diff](double r) { diff.rtol = r; },
                                        "Accept tensors whose relative error ||A - B|| / ||A|| (rel_err) is at most R; "
                                        "with --tolerance, both must hold")
      ->type_name("R")
      ->check(CLI::NonNegativeNumber);
  diff_cmd->add_flag("--parts", diff.parts, "Compare quantized files' stored tensors, not their dequantized values");

  return tool.run(argc, argv, [&] {
    if (diff_cmd->parsed()) return tk::tinfo::run_diff(tool, diff);
    if (list.files.empty()) list.files.push_back("-");
    return tk::tinfo::run_list(tool, list);
  });
}
