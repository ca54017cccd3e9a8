#include "cli/error_report.h"

#include <cctype>
#include <new>

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"
#include "cli/option_hint.h"
#include "cli/signals.h"
#include "tk/core/error.h"

namespace tk::cli {

namespace {

// CLI11 messages start with a capital ("The following argument ..."); ours do not.
// Only an ordinary capitalised word is lowered: not an acronym ("URL") nor an option
// or argument name ("B is required").
std::string lower_first(std::string s) {
  size_t end = 0;
  while (end < s.size() && std::isalpha(static_cast<unsigned char>(s[end]))) ++end;
  bool ordinary = end >= 2 && std::isupper(static_cast<unsigned char>(s[0]));
  for (size_t i = 1; ordinary && i < end; ++i) ordinary = std::islower(static_cast<unsigned char>(s[i]));
  if (ordinary) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

ErrorReport error_report(const std::exception_ptr& error, const std::string& command, bool stdout_broken) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kIo && stdout_broken) return {kExitBrokenPipe, {}};
    ErrorText t = error_text(e);
    if (!t.where.empty()) t.message += " (" + t.where + ")";
    return {exit_code_for(e.kind()), t.message};
  } catch (const CLI::ParseError& e) {
    return {kExitUsage, lower_first(e.what()) + " (see '" + command + " --help')"};
  } catch (const std::bad_alloc&) {
    return {kExitUnavailable, "out of memory"};
  } catch (const std::exception& e) {
    return {kExitFailure, std::string("internal error: ") + e.what()};
  } catch (...) {
    return {kExitFailure, "internal error: unknown exception"};
  }
}

}  // namespace tk::cli
