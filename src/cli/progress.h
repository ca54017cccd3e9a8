// A single-line progress display on stderr, redrawn at most 4 times a second, shown
// only when enabled (--progress, or by default when stderr is a terminal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace tk::cli {

// The rate and the time left of one phase of work counted in units (weights, bytes),
// for progress lines and for warning before a run that will take long.
class WorkMeter {
 public:
  explicit WorkMeter(uint64_t total);
  void add(uint64_t units) { done_ += units; }
  uint64_t done() const { return done_; }
  double seconds() const;
  // Units per second and seconds left; 0 until a second has passed.
  double rate() const;
  double eta_seconds() const;
  // "1.2M/10.8M weights, 0.9M weights/s, ETA 11 s" (rate and ETA once known).
  std::string text(std::string_view unit) const;

 private:
  uint64_t total_, done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// "42 s", "3 min 5 s", "2 h 10 min".
std::string format_duration(double seconds);

class Progress {
 public:
  // `label` starts the line ("tconvert").
  Progress(bool enabled, std::string label);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }

  // Show "LABEL: 3/5 tensors, 1.2 MiB / 4.0 MiB (30%)" unless the last redraw was less
  // than 250 ms ago (the final update, done == total, is always shown).
  void update(uint64_t items_done, uint64_t items_total, uint64_t bytes_done, uint64_t bytes_total);
  // Show an arbitrary status text, throttled the same way.
  void show(std::string_view text, bool force = false);
  // Erase the line. Called by the destructor.
  void clear();

 private:
  bool enabled_;
  std::string label_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tk::cli
