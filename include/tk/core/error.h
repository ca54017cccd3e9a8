// Error reporting for the whole library: one exception type carrying a kind.
// The library never prints or exits; src/cli maps kinds to exit codes and messages.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace tk {

enum class ErrorKind {
  kUsage,        // the caller asked for something impossible (bad option, bad argument)
  kInvalidInput, // the data is malformed, corrupt or unsupported
  kIo,           // the operating system failed a read, write, open, close or rename
  kUnavailable,  // a resource is missing: GPU, memory, codec, feature not compiled in
  kRuntime,      // the operation ran but could not succeed (e.g. no convergence)
  kInternal,     // a bug: an invariant of the library was broken
};

// Name of a kind for messages and JSON ("usage", "invalid input", ...).
const char* error_kind_name(ErrorKind kind);

// Exception thrown by every library function. message() is the message without
// location; where() names the file, tensor or offset concerned (may be empty). Both may
// hold any bytes of a name read from a file, NUL included: use message(), not what(),
// which as a C string ends at the first NUL. option() names, by a stable key, the case
// that a caller's option or argument decides ("store.replace": the name is taken and
// StoreAddOptions::replace would replace it), so that a tool can say which of its flags
// to give (src/cli/option_hint.h); empty for most errors. The message states the fact
// alone and never names a tool or a flag.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, std::string where = {})
      : std::runtime_error(message), kind_(kind), message_(std::move(message)), where_(std::move(where)) {}

  ErrorKind kind() const noexcept { return kind_; }
  const std::string& message() const noexcept { return message_; }
  const std::string& where() const noexcept { return where_; }
  const std::string& option() const noexcept { return option_; }

  // Return a copy of this error that names the case `option` (see above).
  Error with_option(std::string option) const;

  // Return a copy of this error located at `where` instead, its kind, message and
  // option kept: for a caller that knows the place better than the code that threw.
  Error with_where(std::string where) const;

  // Return a copy of this error with `outer` prepended to the location, so that an error
  // raised deep in a parser can be given the file name by the caller:
  // "tensor 'w'" -> "model.safetensors: tensor 'w'".
  Error with_context(const std::string& outer) const;

 private:
  ErrorKind kind_;
  std::string message_;
  std::string where_;
  std::string option_;
};

// Run `body`; an Error it throws is rethrown with the file name `name` in front of its
// location (unless it is already there, or `name` is empty).
template <typename F>
auto located(const std::string& name, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& e) {
    if (name.empty() || e.where().rfind(name, 0) == 0) throw;
    throw e.with_context(name);
  }
}

// Shorthands that build an Error; use as `throw tk::invalid_input("...", where)`.
inline Error usage_error(std::string msg, std::string where = {}) {
  return Error(ErrorKind::kUsage, std::move(msg), std::move(where));
}
inline Error invalid_input(std::string msg, std::string where = {}) {
  return Error(ErrorKind::kInvalidInput, std::move(msg), std::move(where));
}
inline Error io_error(std::string msg, std::string where = {}) {
  return Error(ErrorKind::kIo, std::move(msg), std::move(where));
}
inline Error unavailable(std::string msg, std::string where = {}) {
  return Error(ErrorKind::kUnavailable, std::move(msg), std::move(where));
}
inline Error runtime_error(std::string msg, std::string where = {}) {
  return Error(ErrorKind::kRuntime, std::move(msg), std::move(where));
}
inline Error internal_error(std::string msg, std::string where = {}) {
  return Error(ErrorKind::kInternal, std::move(msg), std::move(where));
}

// The tk::Error an exception caught as `e` stands for: itself, kUnavailable "out of
// memory" for std::bad_alloc, kInternal for anything else. For errors carried across
// threads or ranks as values.
Error error_from(std::exception_ptr e);

// Build an I/O error from errno: "failed to open for reading: No such file or directory".
Error errno_error(const std::string& what, const std::string& where, int errnum);

}  // namespace tk
