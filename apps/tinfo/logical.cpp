// What tinfo shows of a file: quantized files as the tensors they stand for.
#include "cli/input.h"
#include "tinfo.h"
#include "tk/quant/dequant_reader.h"

namespace tk::tinfo {

std::unique_ptr<io::TensorReader> open_shown(const cli::Tool& tool, const std::string& path, bool parts) {
  auto reader = cli::open_reader(tool, path);
  if (parts || !quant::has_layout(reader->metadata())) return reader;
  return std::make_unique<quant::DequantReader>(std::move(reader), io::input_display_name(path));
}

}  // namespace tk::tinfo
