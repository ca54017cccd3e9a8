// Exceptions -> messages and exit codes.
#include "cli/error_report.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"
#include "cli/option_hint.h"
#include "cli/signals.h"
#include "tk/core/error.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

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

// The library states the fact and names the case; the report adds the flag, after the
// message, as the innermost location, or as the whole sentence.
TEST(ErrorReport, TheFlagForALibraryOptionIsTheToolsWord) {
  EXPECT_EQ(report_of(usage_error("a different file is stored under this name", "m.safetensors: w")
                          .with_option("store.replace"))
                .message,
            "a different file is stored under this name; give --replace to replace it (m.safetensors: w)");
  const Error noise = usage_error("the noise level must lie in [0, 1)").with_option("decomp.noise");
  EXPECT_EQ(report_of(noise).message, "the noise level must lie in [0, 1) (--noise)");
  EXPECT_EQ(report_of(noise.with_context("tensor 'c'").with_context("x.safetensors")).message,
            "the noise level must lie in [0, 1) (x.safetensors: tensor 'c': --noise)");
  EXPECT_EQ(report_of(invalid_input("rescal: non-negative factors need a tensor without negative values")
                          .with_option("decomp.rescal_nonneg"))
                .message,
            "rescal: --nonneg needs a tensor without negative values");
  // The kind decides the exit code as before; an unknown key adds nothing.
  EXPECT_EQ(report_of(noise).exit_code, 2);
  EXPECT_EQ(report_of(usage_error("fact", "here").with_option("no.such_key")).message, "fact (here)");
  EXPECT_EQ(skipped_reason_text("kept as opaque bytes", "codec.opaque_skipped"),
            "kept as opaque bytes; restore it with 'tcompress -d'");
}

// Relocating an error keeps the case it names.
TEST(ErrorReport, TheOptionSurvivesANewLocation) {
  const Error e = invalid_input("BitX record needs the base").with_option("codec.record_base");
  EXPECT_EQ(e.with_where("t.tkz").option(), "codec.record_base");
  EXPECT_EQ(e.with_context("t.tkz").option(), "codec.record_base");
  EXPECT_EQ(report_of(e.with_where("t.tkz")).message, "BitX record needs the base (--base) (t.tkz)");
}

// A key the library throws without an entry here would drop the flag from the user's
// line: every key written in lib/ has one.
TEST(ErrorReport, EveryOptionTheLibraryNamesHasAFlag) {
  // The sources beside testdata/ (a compile definition, so the test needs no environment).
  const std::filesystem::path lib = std::filesystem::path(TK_TESTDATA_DIR).parent_path() / "lib";
  const std::regex key_literal("(with_option\\(|\\.option = )\"([^\"]+)\"");
  std::set<std::string> keys;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(lib)) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), key_literal); it != std::sregex_iterator(); ++it)
      keys.insert((*it)[2].str());
  }
  EXPECT_GE(keys.size(), 20u);
  for (const std::string& key : keys) EXPECT_TRUE(has_option_hint(key)) << key;
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
