// Where a tool's data output goes: -o/--output ("-" = stdout) and --format, checked
// before anything is read, so a mistake costs nothing.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tk/io/tensor_file.h"

namespace tk::cli {

// The flags of a tool that writes a data file (docs/ARCHITECTURE.md, "CLI contract"): -f, and for a
// tool that composes a tensor file, the metadata edits and --no-provenance.
struct OutputOptions {
  bool force = false;                      // -f/--force: replace an existing output file
  std::vector<std::string> set_metadata;   // --set-metadata KEY=VALUE, repeatable
  std::vector<std::string> drop_metadata;  // --drop-metadata KEY, repeatable
  bool provenance = true;                  // cleared by --no-provenance

  bool edits_metadata() const { return !set_metadata.empty() || !drop_metadata.empty() || !provenance; }
};

// What a GGUF output made from a file that is not GGUF lacks, for the tools' summary.
inline constexpr const char* kGgufTensorsAlone =
    "the GGUF output holds the tensors alone, with no model metadata (general.architecture, the tokenizer): "
    "llama.cpp cannot run it as a model; convert the model with llama.cpp's convert_hf_to_gguf.py, then quantize "
    "that with tquant";

// Register -f/--force on `app`.
void add_force_flag(CLI::App& app, OutputOptions& options);
// Register --set-metadata and --drop-metadata on `app`.
void add_metadata_edit_options(CLI::App& app, OutputOptions& options);
// Register --no-provenance on `app`.
void add_provenance_flag(CLI::App& app, OutputOptions& options);

// Refuse an output that is an existing regular file unless `force`: kUsage "exists; use
// -f to overwrite". Standard output, devices and FIFOs are written, not replaced; what
// io::output_target refuses (a symbolic link, a block device) is refused here.
void check_output_new(const std::string& output, bool force);

// Refuse binary data on a terminal: throws kUsage "refusing to write binary data to a
// terminal; use -o FILE or redirect" when `output` is "-" and stdout is a terminal.
// Takes the terminal test as an argument so that the decision can be tested.
void check_binary_output(const std::string& output, bool stdout_is_terminal);

// Refuse to read tensor data from a terminal (an input "-" while stdin is one): the
// user most likely forgot the file name. Throws kUsage.
void check_binary_input(const std::vector<std::string>& inputs, bool stdin_is_terminal);

// Refuse an output that is one of the inputs (same file by device and inode, or the
// same path): inputs are read lazily from memory maps while the output is written.
// Throws kUsage naming the path.
void check_output_not_input(const std::vector<std::string>& inputs, const std::string& output);

// Refuse an output path that io::OutputStream would refuse (kUsage): a directory, a
// block device, a socket, a symbolic link other than one to a pipe. Character devices
// and FIFOs named directly (/dev/null, a named pipe) are accepted: io::OutputStream
// writes to them directly instead of through a temporary file and a rename.
void check_output_not_directory(const std::string& output);

// The format to write: `format_flag` when given ("safetensors", "st", "hdf5", "h5",
// "npy"; else kUsage), otherwise from the extension of `output`. Standard output, a
// device or a FIFO without a known extension is written as safetensors; any other name
// whose extension no writer knows is refused (kUsage, naming the known ones and --format).
io::FileFormat output_format(const std::string& output, const std::string& format_flag);

// Parse --compress "zstd" or "zstd:LEVEL" (1..22; "zstd" alone is level 3) into the
// level for WriteOptions::hdf5_zstd_level. Throws kUsage for anything else.
int zstd_level_parse(const std::string& text);

}  // namespace tk::cli
