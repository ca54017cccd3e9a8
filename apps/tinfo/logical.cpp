// What tinfo shows of a file: quantized files as the tensors they stand for.
#include "cli/input.h"
#include "cli/path_args.h"
#include "tinfo.h"
#include "tk/quant/dequant_reader.h"

namespace tk::tinfo {

std::unique_ptr<io::TensorReader> open_shown(const cli::Tool& tool, const std::string& path, bool parts) {
  auto reader = cli::open_reader(tool, path);
  if (parts) return reader;
  if (auto logical =
          quant::open_dequant_reader(reader, cli::file_path(path), cli::input_display_name(path), std::nullopt, false))
    return logical;
  return reader;
}

}  // namespace tk::tinfo
