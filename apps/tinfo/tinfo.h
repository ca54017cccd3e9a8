// tinfo: list the tensors of tensor files (with metadata and statistics), or compare
// two files tensor by tensor (`tinfo diff`).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/tool.h"
#include "tk/io/tensor_file.h"

namespace tk::tinfo {

// The reader tinfo shows for `path`: a file tquant wrote as its logical tensors
// (quant::DequantReader: dequantized when read), or, with `parts` or for any other file,
// the tensors as stored.
std::unique_ptr<io::TensorReader> open_shown(const cli::Tool& tool, const std::string& path, bool parts);

struct ListOptions {
  std::vector<std::string> files;  // "-" = stdin
  bool metadata = false;           // print the metadata after each table
  bool stats = false;              // add statistics columns (reads the data)
  bool parts = false;              // a quantized file's stored parts, not its tensors
};

// One input listed: its text block, its JSON object (when asked for), and the steps of
// a checkpoint root that could not be read (listed as invalid; the run then fails).
struct Listing {
  std::string text;
  nlohmann::json doc;
  std::vector<Error> errors;
};

// A checkpoint root (its steps) or a model store (its files) listed; nullopt for any
// other path. --stats and --parts, which read tensors, are refused there (kUsage).
std::optional<Listing> list_directory(const std::string& path, const ListOptions& options, bool with_json);

// List each file; returns the exit code.
int run_list(cli::Tool& tool, const ListOptions& options);

struct DiffOptions {
  std::string a, b;
  std::optional<double> tolerance;  // max abs error for `close` tensors to pass
  std::optional<double> rtol;       // max relative error ||a - b|| / ||a|| for them to pass
  bool parts = false;               // compare quantized files' stored parts, not their tensors
};

// Compare two files; returns 0 when they match, 1 when they differ.
int run_diff(cli::Tool& tool, const DiffOptions& options);

}  // namespace tk::tinfo
