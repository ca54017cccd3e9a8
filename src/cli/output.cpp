#include "cli/output.h"

#include <sys/stat.h>

#include "tk/core/error.h"

namespace tk::cli {

void check_binary_output(const std::string& output, bool stdout_is_terminal) {
  if (output == "-" && stdout_is_terminal)
    throw usage_error("refusing to write binary data to a terminal; use -o FILE or redirect");
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

io::FileFormat output_format(const std::string& output, const std::string& format_flag) {
  if (!format_flag.empty()) {
    io::FileFormat f = io::format_parse(format_flag);
    if (f == io::FileFormat::kUnknown || f == io::FileFormat::kTkz || f == io::FileFormat::kShardIndex)
      throw usage_error("unknown output format '" + format_flag + "' (expected safetensors, hdf5 or npy)");
    return f;
  }
  io::FileFormat f = io::format_from_extension(output);
  if (f == io::FileFormat::kUnknown) return io::FileFormat::kSafetensors;
  if (f == io::FileFormat::kShardIndex || f == io::FileFormat::kTkz)
    throw usage_error("cannot write this format; use .safetensors, .h5 or .npy (or --format)", output);
  return f;
}

}  // namespace tk::cli
