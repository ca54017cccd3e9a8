#include "cli/output.h"

#include <sys/stat.h>

#include <charconv>

#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::cli {

void check_binary_output(const std::string& output, bool stdout_is_terminal) {
  if (output == "-" && stdout_is_terminal)
    throw usage_error("refusing to write binary data to a terminal; use -o FILE or redirect");
}

void check_binary_input(const std::vector<std::string>& inputs, bool stdin_is_terminal) {
  if (!stdin_is_terminal) return;
  for (const auto& input : inputs)
    if (input == "-") throw usage_error("refusing to read binary data from a terminal; give a FILE or redirect");
}

void check_output_not_input(const std::vector<std::string>& inputs, const std::string& output) {
  if (output == "-") return;
  struct stat out_st;
  bool out_exists = ::stat(output.c_str(), &out_st) == 0;
  for (const auto& input : inputs) {
    if (input == "-") continue;
    bool same = input == output;
    struct stat in_st;
    if (!same && out_exists && ::stat(input.c_str(), &in_st) == 0)
      same = in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino;
    if (same) throw usage_error("the output is also an input; write to another file", output);
  }
}

void add_force_flag(CLI::App& app, OutputOptions& o) {
  app.add_flag("-f,--force", o.force, "Replace an existing output file");
}

void add_metadata_edit_options(CLI::App& app, OutputOptions& o) {
  app.add_option("--set-metadata", o.set_metadata, "Set KEY to VALUE in the output's metadata; repeatable")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  app.add_option("--drop-metadata", o.drop_metadata, "Leave KEY out of the output's metadata; repeatable")
      ->type_name("KEY")
      ->allow_extra_args(false);
}

void add_provenance_flag(CLI::App& app, OutputOptions& o) {
  app.add_flag_callback("--no-provenance", [&o] { o.provenance = false; },
                        "Do not record this command in the output's metadata");
}

void check_output_new(const std::string& output, bool force) {
  if (output == "-") return;
  if (io::output_target(output) == io::OutputTarget::kRegularFile && !force)
    throw usage_error("the output exists; use -f to overwrite", output);
}

void check_output_not_directory(const std::string& output) {
  if (output == "-") return;
  // What the library will refuse to write, refused before anything is read.
  io::output_target(output);
}

io::FileFormat output_format(const std::string& output, const std::string& format_flag) {
  if (!format_flag.empty()) {
    io::FileFormat f = io::format_parse(format_flag);
    if (f == io::FileFormat::kUnknown || f == io::FileFormat::kTkz || f == io::FileFormat::kShardIndex)
      throw usage_error("unknown output format '" + format_flag + "' (expected safetensors, hdf5, gguf, npy or npz)");
    return f;
  }
  io::FileFormat f = io::format_from_extension(output);
  if (f == io::FileFormat::kUnknown) {
    if (output == "-" || io::output_target(output) == io::OutputTarget::kStream) return io::FileFormat::kSafetensors;
    throw usage_error("unknown output extension; use .safetensors, .h5, .gguf, .npy or .npz, or give --format", output);
  }
  if (f == io::FileFormat::kShardIndex || f == io::FileFormat::kTkz || f == io::FileFormat::kTorch)
    throw usage_error("cannot write this format; use .safetensors, .h5, .gguf, .npy or .npz (or --format)", output);
  return f;
}

int zstd_level_parse(const std::string& text) {
  constexpr int kDefaultLevel = 3;
  if (text == "zstd") return kDefaultLevel;
  if (text.rfind("zstd:", 0) == 0) {
    int level = 0;
    const char* first = text.data() + 5;
    const char* last = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(first, last, level);
    if (ec == std::errc() && ptr == last && first != last && level >= 1 && level <= 22) return level;
  }
  throw usage_error("invalid --compress '" + text + "' (expected zstd or zstd:LEVEL with LEVEL 1..22)");
}

}  // namespace tk::cli
