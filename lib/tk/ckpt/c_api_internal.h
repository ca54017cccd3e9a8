// What the C interfaces (tk_ckpt.h, tk_ckpt_dist.h) share: turning exceptions into a
// status and the calling thread's message. Internal to libtkckpt.
#pragma once

#include <exception>
#include <new>
#include <optional>
#include <string>

#include "tk_ckpt.h"
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

// The C form of a tier's progress, for tk_ckpt_flush_status and tk_dckpt_flush_status.
inline tk_ckpt_flush_report flush_report(std::optional<uint64_t> committed, std::optional<uint64_t> durable,
                                         uint64_t pending, double lag_seconds) {
  tk_ckpt_flush_report r{};
  r.has_latest_committed = committed.has_value() ? 1 : 0;
  r.latest_committed = committed.value_or(0);
  r.has_latest_durable = durable.has_value() ? 1 : 0;
  r.latest_durable = durable.value_or(0);
  r.pending = pending;
  r.lag_seconds = lag_seconds;
  return r;
}

template <typename T> void require(const T* pointer, const char* what) {
  if (pointer == nullptr) throw usage_error(std::string(what) + " is NULL");
}

}  // namespace tk::ckpt::capi
