// Opening tensor files in a tool: the library lists what a file holds that cannot be a
// tensor (TensorReader::skipped()) and says nothing; the tool tells the user, so that
// nothing is lost in silence.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cli/tool.h"
#include "tk/io/tensor_file.h"

namespace tk::cli {

// Warn on stderr about the objects `reader` left out of the file at `path`, one line per
// reason: "TOOL: warning: skipped 'NAME': REASON (FILE)", or for a reason shared by
// several "skipped N objects ('A', 'B', 'C', ...): REASON (FILE)"; past 20 reasons, one
// line counts the rest. Printed even with -q: data is missing.
void warn_skipped(const Tool& tool, const io::TensorReader& reader, const std::string& path);

// io::open_reader(path, options), or a codec::TkzReader for a .tkz file, then warn_skipped.
std::unique_ptr<io::TensorReader> open_reader(const Tool& tool, const std::string& path,
                                              const io::ReadOptions& options = {});

// A reader that takes indices in any order, for tools that read tensors twice or in
// their own order, with memory bounded by the tensor being read: `path` itself when it
// is a regular file, a directory or a shard index; standard input or another stream is
// first copied to a temporary file in $TMPDIR (unlinked at once, so nothing is left
// behind) and mapped from there; TensorReader::release() keeps the resident part small.
// Errors name the stream ("<stdin>"), not the temporary file. `open`, when given, opens
// the file (or the copy) instead of the generic opener.
using ReaderOpener = std::function<std::unique_ptr<io::TensorReader>(const std::string& path)>;
std::unique_ptr<io::TensorReader> open_seekable_reader(const Tool& tool, const std::string& path,
                                                       const ReaderOpener& open = {});

}  // namespace tk::cli
