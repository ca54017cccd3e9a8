#include "cli/progress.h"

#include <cstdio>

#include <fmt/format.h>

#include "cli/display_text.h"
#include "cli/number_format.h"

namespace tk::cli {

namespace {
constexpr auto kMinInterval = std::chrono::milliseconds(250);
}

namespace {

// 950, 12.3K, 4.5M, 7.0G.
std::string short_count(double n) {
  if (n < 1e3) return fmt::format("{:.0f}", n);
  if (n < 1e6) return fmt::format("{:.1f}K", n / 1e3);
  if (n < 1e9) return fmt::format("{:.1f}M", n / 1e6);
  return fmt::format("{:.1f}G", n / 1e9);
}

}  // namespace

WorkMeter::WorkMeter(uint64_t total) : total_(total), start_(std::chrono::steady_clock::now()) {}

double WorkMeter::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double WorkMeter::rate() const {
  const double s = seconds();
  return s >= 1 && done_ > 0 ? static_cast<double>(done_) / s : 0;
}

double WorkMeter::eta_seconds() const {
  const double r = rate();
  return r > 0 && total_ > done_ ? static_cast<double>(total_ - done_) / r : 0;
}

std::string WorkMeter::text(std::string_view unit) const {
  std::string t = fmt::format("{}/{} {}", short_count(static_cast<double>(done_)),
                              short_count(static_cast<double>(total_)), unit);
  if (rate() > 0) t += fmt::format(", {} {}/s, ETA {}", short_count(rate()), unit, format_duration(eta_seconds()));
  return t;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
  return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
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
