// What the C interfaces (tk_ckpt.h, tk_ckpt_dist.h) share: turning exceptions into a
// status and the calling thread's message. Internal to libtkckpt.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "tk/ckpt/tk_ckpt.h"
#include "tk/core/error.h"

namespace tk::ckpt::capi {

using tk::ErrorKind;
using tk::usage_error;

inline thread_local std::string error_message;
inline thread_local bool error_out_of_memory = false;

// Record a failure's message; never throws (building the message may run out of memory).
template <typename BuildMessage> int fail(int status, BuildMessage build) noexcept {
  try {
    error_message = build();
    error_out_of_memory = false;
  } catch (...) {
    error_out_of_memory = true;
  }
  return status;
}

inline int status_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return TK_CKPT_ERR_USAGE;
    case ErrorKind::kInvalidInput: return TK_CKPT_ERR_INVALID_INPUT;
    case ErrorKind::kIo: return TK_CKPT_ERR_IO;
    case ErrorKind::kUnavailable: return TK_CKPT_ERR_UNAVAILABLE;
    case ErrorKind::kRuntime: return TK_CKPT_ERR_RUNTIME;
    case ErrorKind::kInternal: break;
  }
  return TK_CKPT_ERR_INTERNAL;
}

// Run `body` (returning a status) and turn whatever it throws into a status.
template <typename Body> int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const tk::Error& e) {
    return fail(status_for(e.kind()), [&] {
      std::string text = e.message();
      if (!e.where().empty()) text += " (" + e.where() + ")";
      return text;
    });
  } catch (const std::bad_alloc&) {
    return fail(TK_CKPT_ERR_UNAVAILABLE, [] { return std::string("out of memory"); });
  } catch (const std::exception& e) {
    return fail(TK_CKPT_ERR_INTERNAL, [&] { return std::string("internal error: ") + e.what(); });
  } catch (...) {
    return fail(TK_CKPT_ERR_INTERNAL, [] { return std::string("internal error: unknown exception"); });
  }
}

template <typename T> void require(const T* pointer, const char* what) {
  if (pointer == nullptr) throw usage_error(std::string(what) + " is NULL");
}

}  // namespace tk::ckpt::capi
