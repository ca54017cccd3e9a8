#include "cli/exit_code.h"

namespace tk::cli {

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return kExitUsage;
    case ErrorKind::kInvalidInput: return kExitInvalidInput;
    case ErrorKind::kIo: return kExitIo;
    case ErrorKind::kUnavailable: return kExitUnavailable;
    case ErrorKind::kRuntime:
    case ErrorKind::kInternal: break;
  }
  return kExitFailure;
}

}  // namespace tk::cli
