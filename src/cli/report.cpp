#include "cli/report.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>

#include "cli/display_text.h"
#include "tk/core/error.h"
#include "tk/core/mapped_files.h"
#include "tk/io/stream.h"

namespace tk::cli {

namespace {

// Columns on screen of an escaped cell: one per code point (continuation bytes take none).
size_t display_width(const std::string& cell) {
  size_t width = 0;
  for (unsigned char c : cell) width += (c & 0xc0) != 0x80;
  return width;
}

}  // namespace

TextTable::TextTable(std::vector<std::string> header) : header_(std::move(header)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != header_.size()) throw internal_error("table row has the wrong number of cells");
  for (auto& cell : cells) cell = escape_text(cell);
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) width[c] = display_width(header_[c]);
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  std::string out;
  auto append = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c) {
      out += row[c];
      if (c + 1 < row.size()) out.append(width[c] - display_width(row[c]) + 2, ' ');
    }
    out += '\n';
  };
  append(header_);
  for (const auto& row : rows_) append(row);
  return out;
}

void write_stdout(std::string_view text) {
  if (text.empty()) return;
  check_mapped_files();  // a report computed from a truncated input is not printed
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    throw errno_error("write failed", "<stdout>", errno);
}

CLI::Validator report_path(const std::string& kind) {
  return CLI::Validator(
      [kind](std::string& path) -> std::string {
        struct stat st;
        if (path == "-" || ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
        std::FILE* f = std::fopen(path.c_str(), "rb");
        if (!f) return {};
        char head[64];
        const size_t n = std::fread(head, 1, sizeof head, f);
        std::fclose(f);
        size_t i = 0;
        while (i < n && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
        const bool report = i == n ? n == 0  // an empty file holds no data
                                   : kind == "SVG" ? head[i] == '<' : head[i] == '{' || head[i] == '[';
        if (report) return {};
        return "'" + path + "' exists and is not a " + kind + " report; only a report is replaced";
      },
      "", "report path");
}

void write_json(const nlohmann::json& doc, const std::string& path) {
  // Names from files are not guaranteed UTF-8: replace bad bytes instead of failing.
  std::string text = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (path == "-") {
    write_stdout(text);
    return;
  }
  // A regular file is replaced through a temporary name; a device, a FIFO or a
  // descriptor name (/dev/stderr) is written directly; a planted link is refused.
  auto out = io::OutputStream::open(path);
  out->write(text.data(), text.size());
  out->commit();
}

}  // namespace tk::cli
