// Exit codes of every tool, and the mapping from library error kinds to them.
#pragma once

#include "tk/core/error.h"

namespace tk::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // runtime failure; also "files differ" for tinfo diff
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalidInput = 3;
inline constexpr int kExitIo = 4;
inline constexpr int kExitUnavailable = 5;

int exit_code_for(ErrorKind kind);

}  // namespace tk::cli
