// Wall-clock time as text, for the records files keep of when they were made.
#pragma once

#include <string>

namespace tk {

// The current UTC time as ISO 8601 to the second: "2026-11-30T08:00:00Z", or the time
// SOURCE_DATE_EPOCH names when it is set to a valid count of seconds (reproducible output).
std::string utc_now_iso8601();

}  // namespace tk
