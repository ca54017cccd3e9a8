#include "cli/progress.h"

#include <cstdio>

#include <fmt/format.h>

#include "cli/display_text.h"
#include "cli/number_format.h"

namespace tk::cli {

namespace {
constexpr auto kMinInterval = std::chrono::milliseconds(250);
}

Progress::Progress(bool enabled, std::string label) : enabled_(enabled), label_(std::move(label)) {}

Progress::~Progress() { clear(); }

void Progress::update(uint64_t items_done, uint64_t items_total, uint64_t bytes_done, uint64_t bytes_total) {
  if (!enabled_) return;
  bool final = items_done == items_total;
  if (!final && drawn_ && std::chrono::steady_clock::now() - last_ < kMinInterval) return;
  unsigned percent = bytes_total ? static_cast<unsigned>(bytes_done * 100 / bytes_total) : 100;
  show(fmt::format("{}/{} tensors, {} / {} ({}%)", items_done, items_total, format_bytes(bytes_done),
                   format_bytes(bytes_total), percent),
       true);
}

void Progress::show(std::string_view text, bool force) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_ < kMinInterval) return;
  last_ = now;
  drawn_ = true;
  // "\r" returns to the line start, "\033[K" erases what a longer previous line left.
  std::string shown = escape_text(text);
  std::fprintf(stderr, "\r%s: %s\033[K", label_.c_str(), shown.c_str());
  std::fflush(stderr);
}

void Progress::clear() {
  if (!enabled_ || !drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace tk::cli
