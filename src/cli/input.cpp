#include "cli/input.h"

namespace tk::cli {

void warn_skipped(const Tool& tool, const io::TensorReader& reader, const std::string& path) {
  for (const io::SkippedObject& s : reader.skipped())
    tool.warning("skipped '" + s.name + "': " + s.reason + " (" + io::input_display_name(path) + ")");
}

std::unique_ptr<io::TensorReader> open_reader(const Tool& tool, const std::string& path,
                                              const io::ReadOptions& options) {
  auto reader = io::open_reader(path, options);
  warn_skipped(tool, *reader, path);
  return reader;
}

}  // namespace tk::cli
