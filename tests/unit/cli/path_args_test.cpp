#include "cli/path_args.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace tk::cli {
namespace {

TEST(PathArgs, ADashNamesTheStandardStreams) {
  EXPECT_TRUE(is_std_stream("-"));
  EXPECT_FALSE(is_std_stream("./-"));
  EXPECT_FALSE(is_std_stream("--"));
  EXPECT_FALSE(is_std_stream(""));
  EXPECT_EQ(input_display_name("-"), "<stdin>");
  EXPECT_EQ(output_display_name("-"), "<stdout>");
  EXPECT_EQ(input_display_name("a/b.h5"), "a/b.h5");
  EXPECT_EQ(output_display_name("./-"), "./-");
  // Library look-ups (a directory, a config.json beside a model) get no place for "-".
  EXPECT_EQ(file_path("-"), "");
  EXPECT_EQ(file_path("model/"), "model/");
}

TEST(PathArgs, OpenMapsOnlyABareDash) {
  tk::test::TempDir dir("tk-path-args");
  const std::string path = dir.path() + "/-";
  std::ofstream(path) << "dash";
  auto in = open_input(path);
  EXPECT_FALSE(in->is_standard_input());
  EXPECT_EQ(in->name(), path);
  EXPECT_TRUE(open_input("-")->is_standard_input());
  EXPECT_TRUE(open_output("-")->is_stdout());
  EXPECT_FALSE(open_output(dir.path() + "/out")->is_stdout());
}

}  // namespace
}  // namespace tk::cli
