#include "tk/core/error.h"

#include <cstring>

namespace tk {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kInvalidInput: return "invalid input";
    case ErrorKind::kIo: return "I/O";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kRuntime: return "runtime";
    case ErrorKind::kInternal: return "internal";
  }
  return "unknown";
}

Error Error::with_context(const std::string& outer) const {
  if (outer.empty()) return *this;
  std::string where = where_.empty() ? outer : outer + ": " + where_;
  return Error(kind_, message_, std::move(where));
}

Error errno_error(const std::string& what, const std::string& where, int errnum) {
  return Error(ErrorKind::kIo, what + ": " + std::strerror(errnum), where);
}

}  // namespace tk
