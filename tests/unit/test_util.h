// Helpers shared by the unit tests of every module.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/error.h"

namespace tk::test {

// n seeded draws from N(mean, sigma^2) (mt19937_64): the test data of the quantizers.
inline std::vector<float> normal_floats(size_t n, uint64_t seed, float mean = 0.0f, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(mean, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

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

// Run `fn`; expect a tk::Error of `kind` whose message is exactly `message` and, when
// `where` is given, whose location is exactly `where`.
template <typename Fn>
void expect_error_exact(Fn&& fn, ErrorKind kind, const std::string& message, const std::string& where = "") {
  try {
    fn();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(std::string(e.what()), message);
    if (!where.empty()) {
      EXPECT_EQ(e.where(), where);
    }
  }
}

// A fresh directory under the test temporary directory, removed with its contents at
// the end of the scope.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "tk") {
    std::string tmpl = ::testing::TempDir() + prefix + "_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Write `content` (any contiguous range of bytes or chars) to `name` inside the
  // directory; returns the file's path.
  template <typename Bytes> std::string write(const std::string& name, const Bytes& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(std::data(content)), static_cast<std::streamsize>(std::size(content)));
    return p;
  }

 private:
  std::string path_;
};

}  // namespace tk::test
