// tcompress: compress tensor files into .tkz containers (lossless, BitX delta against a
// base, lossy) and restore them byte for byte; `tcompress store` is the deduplicating
// model store (store.h).
#pragma once

#include <string>

#include "cli/tool.h"

namespace tk::tcompress {

struct CompressOptions {
  std::string input = "-";    // file to compress, or container to restore/list
  std::string output;         // -o/--output; empty: resolve_output chooses
  bool to_stdout = false;     // -c/--stdout
  bool decompress = false;    // -d
  bool list = false;          // -l
  int level = 3;              // --level: zstd level of the coded streams
  std::string chunk = "1MiB"; // --chunk: bytes per independently coded chunk
  std::string base;           // --base: BitX base model (compress and restore)
  std::string format;         // --format of an extracted tensor
  bool sha256 = false;        // --sha256: the footer records SHA-256 instead of XXH3-128
  bool container = false;     // --container: never the compact form (one zstd frame)
  bool strict = false;        // --strict: refuse a damaged tensor file (else kept opaque, with a warning)
  // Lossy modes (lib/tk/codec/lossy.h).
  std::string video;          // --video hevc|av1|h264
  std::string lossy;          // --lossy quant
  int crf = -1;               // --crf N
  double bits_per_value = 0;  // --bits-per-value B
  bool no_rotate = false;     // --no-rotate
  double min_sqnr = -1;       // --min-sqnr DB: the floor under which a tensor takes the next path
};

// Choose the output as zstd does when -o is not given: IN.tkz when compressing, IN
// without its .tkz with -d, stdout for stdin, with -c and for a tensor extracted with
// -d -t. Throws kUsage for -c with -o, -o/-c with -l, and -d of a name without .tkz.
void resolve_output(CompressOptions& options, bool extract);

// Compress options.input into a container; returns the exit code.
int run_compress(cli::Tool& tool, const CompressOptions& options);
// Restore a container (-d), or extract the one tensor named by -t.
int run_decompress(cli::Tool& tool, const CompressOptions& options);
// List a container's records (-l).
int run_list(cli::Tool& tool, const CompressOptions& options);

}  // namespace tk::tcompress
