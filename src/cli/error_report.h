// What a tool says and returns when its work ends in an exception: the one place where
// exceptions become messages and exit codes (used by Tool::run).
#pragma once

#include <exception>
#include <string>

namespace tk::cli {

struct ErrorReport {
  int exit_code = 0;
  std::string message;  // for "TOOL: error: MESSAGE"; empty: exit quietly
};

// Describe `error`:
// - tk::Error: "WHAT (WHERE)" (or "WHAT" without a location), with the flag for its
//   option (option_hint.h), exit_code_for(kind);
//   an I/O error while stdout is a broken pipe (`stdout_broken`): quiet, 141;
// - CLI::ParseError (not help or version): "MESSAGE (see 'COMMAND --help')", 2, with
//   the first letter of CLI11's message lowered to match ours;
// - std::bad_alloc: "out of memory", 5;
// - any other std::exception: "internal error: WHAT", 1; anything else likewise.
ErrorReport error_report(const std::exception_ptr& error, const std::string& command, bool stdout_broken);

}  // namespace tk::cli
