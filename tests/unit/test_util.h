// Helpers shared by the unit tests of every module.
#pragma once

#include <gtest/gtest.h>

#include "tk/core/error.h"

namespace tk::test {

// The kind of the tk::Error that `fn` throws; a test failure (and kInternal) when it
// throws none.
template <typename Fn> ErrorKind kind_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no tk::Error thrown";
  return ErrorKind::kInternal;
}

}  // namespace tk::test
