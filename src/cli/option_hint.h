// The flag a tool names for a case its user can change: the library states the fact and
// names the case by a key (tk::Error::option(), io::SkippedObject::option), and this
// table words the flag, so that no library message knows a tool or a flag.
#pragma once

#include <string>
#include <string_view>

#include "tk/core/error.h"

namespace tk::cli {

struct ErrorText {
  std::string message;
  std::string where;
};

// The message and location a tool shows for `e`: the library's, with the flag for
// e.option() added (to the message, or as the innermost location) when the table has
// the key; unchanged otherwise.
ErrorText error_text(const Error& e);

// `reason` of an object a reader skipped, with the flag for `option` added.
std::string skipped_reason_text(const std::string& reason, const std::string& option);

// Whether the table words a flag for `key` (for the test that every key the library
// throws has one).
bool has_option_hint(std::string_view key);

}  // namespace tk::cli
