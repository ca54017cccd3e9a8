// tinfo: list the tensors of tensor files (with metadata and statistics), or compare
// two files tensor by tensor (`tinfo diff`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/tool.h"

namespace tk::tinfo {

struct ListOptions {
  std::vector<std::string> files;  // "-" = stdin
  bool metadata = false;           // print the metadata after each table
  bool stats = false;              // add statistics columns (reads the data)
};

// List each file; returns the exit code.
int run_list(cli::Tool& tool, const ListOptions& options);

struct DiffOptions {
  std::string a, b;
  std::optional<double> tolerance;  // max abs error for `close` tensors to pass
  std::optional<double> rtol;       // max relative error ||a - b|| / ||a|| for them to pass
};

// Compare two files; returns 0 when they match, 1 when they differ.
int run_diff(cli::Tool& tool, const DiffOptions& options);

}  // namespace tk::tinfo
