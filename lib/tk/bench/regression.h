// Direction-aware comparison of one benchmark figure between two runs, the rule behind
// `tbench compare` and CI regression checks.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tk::bench {

// Which way a metric improves. kNone: informational (an iteration count), never judged.
enum class Better { kHigher, kLower, kNone };

// "higher", "lower", "none" and back; parsing throws kInvalidInput for anything else
// (the text comes from a results file).
const char* better_name(Better b);
Better better_parse(std::string_view text);

enum class Verdict {
  kSame,      // within the threshold either way
  kImproved,  // moved past the threshold in the better direction
  kRegressed, // moved past the threshold in the worse direction
};

struct Change {
  double relative = 0;  // (new - old) / |old|; +-inf when old is 0 and new is not
  Verdict verdict = Verdict::kSame;
};

// The [min, max] of a timed metric's repetitions.
struct Spread {
  double min = 0, max = 0;
  bool holds(double v) const { return v >= min && v <= max; }
};

// Judge `new_value` against `old_value` with a relative `threshold` (0.05 = 5%). A
// change exactly at the threshold is kSame. kNone metrics are always kSame. When the
// runs' spreads are known, a change inside the noise of either run (the new median
// within the old run's spread, or the old median within the new run's) is kSame too,
// whatever its size: on a shared machine that is not a measured change.
Change judge_change(double old_value, double new_value, Better better, double threshold,
                    std::optional<Spread> old_spread = std::nullopt, std::optional<Spread> new_spread = std::nullopt);

}  // namespace tk::bench
