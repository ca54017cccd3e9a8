// A single-line progress display on stderr, redrawn at most 4 times a second, shown
// only when enabled (--progress, or by default when stderr is a terminal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace tk::cli {

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
