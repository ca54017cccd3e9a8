// Reports on stdout: aligned text tables for people, JSON documents for programs.
// A tool builds both from the same rows; `--json PATH|-` decides where the JSON goes,
// and `--json -` replaces the text report on stdout (stdout carries one or the other).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace tk::cli {

// A text table: a header row and data rows, columns left-aligned, separated by two
// spaces, each as wide as its widest cell; the last column is not padded, so lines
// carry no trailing spaces.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);

  // Add a row; it must have as many cells as the header (throws kInternal otherwise).
  // Cells are shown through escape_text (display_text.h): one row is one line.
  void add_row(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }

  // The table as lines ending in '\n', header first.
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// A validator for a report path (--json PATH, --svg FILE): reports are replaced like a
// log when run again, but only a report is replaced. An existing regular file that does
// not start as one (`kind` "JSON": '{' or '['; "SVG": '<') is refused, so that a slip
// such as `--json model.safetensors` cannot destroy data.
CLI::Validator report_path(const std::string& kind);

// Write `text` to standard output through stdio. Throws kIo on a write error (a broken
// pipe, a full disk); output is checked again when stdout is closed at exit.
void write_stdout(std::string_view text);

// Write `doc` as indented JSON followed by a newline to `path`: "-" is stdout, anything
// else a file written through a temporary name and renamed when complete (devices and
// FIFOs are written directly). Strings carry the real characters (controls escaped as
// JSON requires); bytes that are not UTF-8, which JSON cannot carry, become U+FFFD
// (HDF5, .npz or GGUF names may hold them; safetensors names are UTF-8 by definition).
void write_json(const nlohmann::json& doc, const std::string& path);

}  // namespace tk::cli
