// Exceptions -> messages and exit codes.
#include "cli/error_report.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"
#include "cli/signals.h"
#include "tk/core/error.h"

namespace tk::cli {
namespace {

template <typename E>
ErrorReport report_of(E e, bool broken = false) {
  return error_report(std::make_exception_ptr(std::move(e)), "tinfo", broken);
}

TEST(ExitCode, EachKindHasItsCode) {
  EXPECT_EQ(exit_code_for(ErrorKind::kUsage), 2);
  EXPECT_EQ(exit_code_for(ErrorKind::kInvalidInput), 3);
  EXPECT_EQ(exit_code_for(ErrorKind::kIo), 4);
  EXPECT_EQ(exit_code_for(ErrorKind::kUnavailable), 5);
  EXPECT_EQ(exit_code_for(ErrorKind::kRuntime), 1);
  EXPECT_EQ(exit_code_for(ErrorKind::kInternal), 1);
}

TEST(ErrorReport, LibraryErrorsGiveWhatAndWhere) {
  ErrorReport r = report_of(errno_error("failed to open for reading", "nope.safetensors", ENOENT));
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.message, "failed to open for reading: No such file or directory (nope.safetensors)");
  r = report_of(invalid_input("truncated header"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.message, "truncated header");
  EXPECT_EQ(report_of(usage_error("bad")).exit_code, 2);
  EXPECT_EQ(report_of(unavailable("CUDA support not compiled in")).exit_code, 5);
  EXPECT_EQ(report_of(runtime_error("no convergence")).exit_code, 1);
}

TEST(ErrorReport, KeepsNamesWholeThroughANul) {
  using namespace std::string_literals;
  Error e = invalid_input("tensor 'a\0b' is bad"s, "f.safetensors: tensor 'a\0b'"s).with_context("outer");
  EXPECT_EQ(e.message(), "tensor 'a\0b' is bad"s);
  EXPECT_EQ(report_of(e).message, "tensor 'a\0b' is bad (outer: f.safetensors: tensor 'a\0b')"s);
}

TEST(ErrorReport, IoErrorOnABrokenPipeIsQuiet) {
  ErrorReport r = report_of(io_error("write failed: Broken pipe", "<stdout>"), /*broken=*/true);
  EXPECT_EQ(r.exit_code, kExitBrokenPipe);
  EXPECT_EQ(r.message, "");
  // Other kinds are still reported when the pipe is gone.
  EXPECT_EQ(report_of(invalid_input("bad"), true).exit_code, 3);
}

TEST(ErrorReport, ParseErrorsAreUsageErrorsWithAHint) {
  CLI::App app("test", "tinfo");
  app.add_flag("--stats");
  try {
    app.parse("--foo", false);
    FAIL() << "no parse error";
  } catch (...) {
    ErrorReport r = error_report(std::current_exception(), "tinfo diff", false);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.message, "the following argument was not expected: --foo (see 'tinfo diff --help')");
  }
}

TEST(ErrorReport, ParseErrorKeepsNamesAndAcronymsCapitalised) {
  EXPECT_EQ(error_report(std::make_exception_ptr(CLI::RequiredError("B")), "tinfo diff", false).message,
            "B is required (see 'tinfo diff --help')");
  EXPECT_EQ(error_report(std::make_exception_ptr(CLI::ParseError("URL bad", 1)), "t", false).message,
            "URL bad (see 't --help')");
  EXPECT_EQ(error_report(std::make_exception_ptr(CLI::ParseError("Bad value", 1)), "t", false).message,
            "bad value (see 't --help')");
}

TEST(ErrorReport, OtherExceptions) {
  EXPECT_EQ(report_of(std::bad_alloc()).exit_code, 5);
  EXPECT_EQ(report_of(std::bad_alloc()).message, "out of memory");
  ErrorReport r = report_of(std::logic_error("oops"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.message, "internal error: oops");
  r = error_report(std::make_exception_ptr(42), "tinfo", false);
  EXPECT_EQ(r.exit_code, 1);
}

}  // namespace
}  // namespace tk::cli
