// Common flags, --device, tensor selection and output checks: the decisions a tool
// makes before reading anything.
#include <gtest/gtest.h>

#include "test_util.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "cli/common_options.h"
#include "cli/device.h"
#include "cli/output.h"
#include "cli/selection.h"
#include "cli/version.h"
#include "tk/device/device.h"
#include "tk/core/error.h"

namespace tk::cli {
namespace {

namespace fs = std::filesystem;

using test::kind_of;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.where().empty() ? e.what() : std::string(e.what()) + " (" + e.where() + ")";
  }
  return "";
}

TEST(CommonOptions, ParsedFromEitherSideOfASubcommand) {
  CommonOptions o;
  CLI::App app("test", "tool");
  add_common_options(app, o);
  CLI::App* sub = app.add_subcommand("diff");
  add_common_options(*sub, o);
  sub->allow_extras();
  app.parse("-q --no-progress -j 2 --seed 7 diff --json - -t b* -vv --exclude x -t a* file", false);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.verbose, 2);
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.seed, 7u);
  ASSERT_TRUE(o.json);
  EXPECT_EQ(*o.json, "-");
  EXPECT_FALSE(o.text_report());
  EXPECT_EQ(o.progress, false);
  EXPECT_EQ(o.tensors, (std::vector<std::string>{"b*", "a*"}));
  EXPECT_EQ(o.exclude, std::vector<std::string>{"x"});
  EXPECT_EQ(sub->remaining(), std::vector<std::string>{"file"});  // -t takes one value
}

TEST(CommonOptions, TensorsAccumulateAcrossAppAndSubcommand) {
  CommonOptions o;
  CLI::App app("test", "tool");
  add_common_options(app, o);
  CLI::App* sub = app.add_subcommand("diff");
  add_common_options(*sub, o);
  app.parse("-t before diff -t after", false);
  EXPECT_EQ(o.tensors, (std::vector<std::string>{"before", "after"}));
}

TEST(CommonOptions, ProgressDefaultsToTerminalUnlessQuiet) {
  CommonOptions o;
  apply_common_options(o, /*stderr_is_terminal=*/true);
  EXPECT_TRUE(o.show_progress);
  apply_common_options(o, false);
  EXPECT_FALSE(o.show_progress);
  o.quiet = true;
  apply_common_options(o, true);
  EXPECT_FALSE(o.show_progress);
  o.progress = true;
  apply_common_options(o, false);
  EXPECT_TRUE(o.show_progress);
}

TEST(Device, ParsesCpuCudaAuto) {
  EXPECT_EQ(device_parse("cpu").kind, Device::Kind::kCpu);
  EXPECT_EQ(device_parse("auto").kind, Device::Kind::kAuto);
  EXPECT_EQ(kind_of([] { device_parse("gpu"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { device_parse("cuda:"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { device_parse("cuda:x"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { device_parse("cudax"); }), ErrorKind::kUsage);
  // cuda[:N] is refused (exit 5) before any work when the backend or the device is
  // missing, with the reason; a device that is there is taken.
  std::string why;
  const int count = device::cuda_device_count(&why);
  EXPECT_EQ(kind_of([count] { device_parse("cuda:" + std::to_string(count)); }), ErrorKind::kUnavailable);
  if (!device::cuda_compiled()) {
    EXPECT_EQ(message_of([] { device_parse("cuda"); }), "CUDA support not compiled in (--device cuda)");
  } else if (count == 0) {
    EXPECT_EQ(message_of([] { device_parse("cuda"); }), "no CUDA device (" + why + ") (--device cuda)");
  } else {
    EXPECT_EQ(device_parse("cuda").kind, Device::Kind::kCuda);
    EXPECT_EQ(message_of([count] { device_parse("cuda:" + std::to_string(count)); }),
              "device " + std::to_string(count) + " not present (" + std::to_string(count) + " CUDA device" +
                  (count == 1 ? "" : "s") + ") (--device cuda:" + std::to_string(count) + ")");
  }
  EXPECT_EQ(message_of([] { require_no_gpu(Device{Device::Kind::kCuda, 0}, "tinfo"); }),
            "tinfo has no GPU code path; --device cpu or auto runs it on the CPU (--device cuda:0)");
  require_no_gpu(Device{Device::Kind::kAuto, 0}, "tinfo");
#ifdef TK_HAVE_CUDA
  EXPECT_TRUE(device::cuda_compiled());
#else
  EXPECT_FALSE(device::cuda_compiled());
#endif
  EXPECT_EQ(device_name(Device{Device::Kind::kCuda, 1}), "cuda:1");
}

TEST(Version, NamesToolVersionAndFeatures) {
  std::string v = version_text("tinfo");
  EXPECT_EQ(v.rfind(std::string("tinfo (tensorkit) ") + tk_version() + "\nfeatures: hdf5 zstd", 0), 0u) << v;
#ifdef TK_HAVE_CUDA
  EXPECT_NE(v.find("cuda=yes"), std::string::npos);
#else
  EXPECT_NE(v.find("cuda=no"), std::string::npos);
#endif
  EXPECT_EQ(v.back(), '\n');
}

TEST(Selection, IncludeAnyExcludeNone) {
  TensorSelection all;
  EXPECT_TRUE(all.selects("anything"));
  TensorSelection s({"layers.*", "embed.weight"}, {"*.bias"});
  EXPECT_TRUE(s.selects("layers.0.w"));
  EXPECT_FALSE(s.selects("layers.0.bias"));
  EXPECT_TRUE(s.selects("embed.weight"));
  EXPECT_FALSE(s.selects("lm_head.weight"));
  EXPECT_NO_THROW(s.check_all_patterns_used());
}

TEST(Selection, AnUnmatchedPatternIsAUsageError) {
  TensorSelection s({"layers.*", "emebd.weight"}, {});
  s.selects("layers.0.w");
  s.selects("embed.weight");
  EXPECT_EQ(message_of([&] { s.check_all_patterns_used(); }), "no tensor matches -t 'emebd.weight'");
  EXPECT_EQ(kind_of([&] { s.check_all_patterns_used(); }), ErrorKind::kUsage);
  // A pattern whose matches were all excluded still counts as matching.
  TensorSelection t({"a*"}, {"a*"});
  EXPECT_FALSE(t.selects("ab"));
  EXPECT_NO_THROW(t.check_all_patterns_used());
}

TEST(Output, RefusesBinaryDataOnATerminal) {
  EXPECT_EQ(message_of([] { check_binary_output("-", true); }),
            "refusing to write binary data to a terminal; use -o FILE or redirect");
  EXPECT_EQ(kind_of([] { check_binary_output("-", true); }), ErrorKind::kUsage);
  EXPECT_NO_THROW(check_binary_output("-", false));
  EXPECT_NO_THROW(check_binary_output("out.safetensors", true));
}

TEST(Output, RefusesToReadBinaryDataFromATerminal) {
  EXPECT_EQ(message_of([] { check_binary_input({"a.h5", "-"}, true); }),
            "refusing to read binary data from a terminal; give a FILE or redirect");
  EXPECT_NO_THROW(check_binary_input({"-"}, false));
  EXPECT_NO_THROW(check_binary_input({"a.h5"}, true));
}

TEST(Output, RefusesAnOutputThatIsAnInput) {
  fs::path dir = fs::temp_directory_path() / ("tk_cli_output_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string in = (dir / "in.safetensors").string();
  std::ofstream(in) << "x";
  std::string link = (dir / "link.safetensors").string();
  fs::create_symlink(in, link);
  EXPECT_EQ(kind_of([&] { check_output_not_input({in}, in); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([&] { check_output_not_input({"-", link}, in); }), ErrorKind::kUsage);  // same inode
  EXPECT_NO_THROW(check_output_not_input({in}, (dir / "new.h5").string()));
  EXPECT_NO_THROW(check_output_not_input({"-"}, "-"));
  fs::remove_all(dir);
}

TEST(Output, RefusesAnExistingFileWithoutForce) {
  fs::path dir = fs::temp_directory_path() / ("tk_cli_exists_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string file = (dir / "out.safetensors").string();
  std::ofstream(file) << "x";
  EXPECT_EQ(message_of([&] { check_output_new(file, false); }), "the output exists; use -f to overwrite (" + file + ")");
  EXPECT_NO_THROW(check_output_new(file, true));
  EXPECT_NO_THROW(check_output_new((dir / "new.safetensors").string(), false));
  EXPECT_NO_THROW(check_output_new("/dev/null", false));
  EXPECT_NO_THROW(check_output_new("-", false));
  fs::remove_all(dir);
}

TEST(Output, RefusesDirectoriesButNotDevices) {
  EXPECT_EQ(kind_of([] { check_output_not_directory("/tmp"); }), ErrorKind::kUsage);
  EXPECT_NO_THROW(check_output_not_directory("/dev/null"));
  EXPECT_NO_THROW(check_output_not_directory("-"));
  EXPECT_NO_THROW(check_output_not_directory("does-not-exist.safetensors"));
}

TEST(Output, FormatFromFlagThenExtensionThenSafetensors) {
  EXPECT_EQ(output_format("x.h5", ""), io::FileFormat::kHdf5);
  EXPECT_EQ(output_format("x.npy", ""), io::FileFormat::kNpy);
  EXPECT_EQ(output_format("-", ""), io::FileFormat::kSafetensors);
  EXPECT_EQ(output_format("/dev/null", ""), io::FileFormat::kSafetensors);  // a device: written, no extension
  EXPECT_EQ(message_of([] { output_format("x.bin", ""); }),
            "unknown output extension; use .safetensors, .h5, .gguf, .npy or .npz, or give --format (x.bin)");
  EXPECT_EQ(kind_of([] { output_format("model", ""); }), ErrorKind::kUsage);
  EXPECT_EQ(output_format("x.bin", "safetensors"), io::FileFormat::kSafetensors);
  EXPECT_EQ(output_format("x.h5", "safetensors"), io::FileFormat::kSafetensors);
  EXPECT_EQ(output_format("-", "hdf5"), io::FileFormat::kHdf5);
  EXPECT_EQ(kind_of([] { output_format("-", "parquet"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { output_format("x.tkz", ""); }), ErrorKind::kUsage);
  EXPECT_EQ(output_format("x.npz", ""), io::FileFormat::kNpz);
  EXPECT_EQ(output_format("-", "npz"), io::FileFormat::kNpz);
  EXPECT_EQ(kind_of([] { output_format("x.pt", ""); }), ErrorKind::kUsage);  // read, never written
}

TEST(Output, ZstdLevels) {
  EXPECT_EQ(zstd_level_parse("zstd"), 3);
  EXPECT_EQ(zstd_level_parse("zstd:19"), 19);
  EXPECT_EQ(kind_of([] { zstd_level_parse("zstd:0"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { zstd_level_parse("zstd:23"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { zstd_level_parse("zstd:"); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([] { zstd_level_parse("gzip"); }), ErrorKind::kUsage);
}

}  // namespace
}  // namespace tk::cli
