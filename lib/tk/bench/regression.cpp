#include "tk/bench/regression.h"

#include <cmath>
#include <limits>

#include "tk/core/error.h"

namespace tk::bench {

const char* better_name(Better b) {
  switch (b) {
    case Better::kHigher: return "higher";
    case Better::kLower: return "lower";
    case Better::kNone: return "none";
  }
  return "none";
}

Better better_parse(std::string_view text) {
  if (text == "higher") return Better::kHigher;
  if (text == "lower") return Better::kLower;
  if (text == "none") return Better::kNone;
  throw invalid_input("'better' must be higher, lower or none, not '" + std::string(text) + "'");
}

Change judge_change(double old_value, double new_value, Better better, double threshold,
                    std::optional<Spread> old_spread, std::optional<Spread> new_spread) {
  Change c;
  double diff = new_value - old_value;
  if (diff == 0) return c;
  c.relative = old_value != 0 ? diff / std::abs(old_value)
                              : std::copysign(std::numeric_limits<double>::infinity(), diff);
  if (better == Better::kNone || std::abs(c.relative) <= threshold) return c;
  if ((old_spread && old_spread->holds(new_value)) || (new_spread && new_spread->holds(old_value))) return c;
  bool up_is_good = better == Better::kHigher;
  c.verdict = (c.relative > 0) == up_is_good ? Verdict::kImproved : Verdict::kRegressed;
  return c;
}

}  // namespace tk::bench
