#include "tk/core/error.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "tk/core/mapped_files.h"

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
  return with_where(where_.empty() ? outer : outer + ": " + where_);
}

Error Error::with_option(std::string option) const {
  Error e = *this;
  e.option_ = std::move(option);
  return e;
}

Error Error::with_where(std::string where) const {
  Error e = *this;
  e.where_ = std::move(where);
  return e;
}

Error error_from(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return err;
  } catch (const std::bad_alloc&) {
    return unavailable("out of memory");
  } catch (const std::exception& err) {
    return internal_error(err.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
}

Error errno_error(const std::string& what, const std::string& where, int errnum) {
  // A write(2) from a mapped input that shrank fails with EFAULT instead of raising
  // SIGBUS: the input is what is wrong, not the output.
  if (errnum == EFAULT) {
    try {
      check_mapped_files(/*after_failure=*/true);
    } catch (const Error& shrunk) {
      return shrunk;
    }
  }
  return Error(ErrorKind::kIo, what + ": " + std::strerror(errnum), where);
}

}  // namespace tk
