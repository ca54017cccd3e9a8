// Direction-aware comparison of one benchmark figure between two runs, the rule behind
// `tbench compare` and CI regression checks.
#pragma once

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

// Judge `new_value` against `old_value` with a relative `threshold` (0.05 = 5%). A
// change exactly at the threshold is kSame. kNone metrics are always kSame.
Change judge_change(double old_value, double new_value, Better better, double threshold);

}  // namespace tk::bench
