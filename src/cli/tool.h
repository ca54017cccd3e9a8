// The skeleton of every tensorkit executable: a CLI11 app with the common flags, its
// subcommands, and run(), which turns whatever happens into one line on stderr and an
// exit code (docs/ARCHITECTURE.md, "CLI contract"). A tool's main is:
//
//   tk::cli::Tool tool("tinfo", "List the tensors of safetensors, HDF5 and .npy files");
//   tool.app().add_option("files", files, "...");
//   return tool.run(argc, argv, [&] { ...; return 0; });
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/common_options.h"
#include "cli/exit_code.h"
#include "cli/provenance.h"

namespace tk::cli {

class Tool {
 public:
  Tool(std::string name, std::string description);
  Tool(const Tool&) = delete;
  Tool& operator=(const Tool&) = delete;

  const std::string& name() const { return name_; }
  CLI::App& app() { return app_; }
  // The common flags, shared by the app and every subcommand; valid inside run().
  CommonOptions& options() { return options_; }
  const CommonOptions& options() const { return options_; }

  // Add a subcommand that accepts the common flags too.
  CLI::App* add_subcommand(const std::string& name, const std::string& description);
  // Examples for the end of --help (and the man page made from it): command lines, each
  // with what it does. The exit codes follow them.
  void set_examples(const std::vector<std::pair<std::string, std::string>>& examples);

  // What this tool runs on a GPU, in words for --device's help ("int2..int8
  // quantization"); call after the subcommands are added. A tool that never calls it
  // refuses --device cuda[:N] (exit 5) rather than run on the CPU under a GPU's name.
  void set_gpu_work(const std::string& what);

  // The flags of a data output, shared like the common ones; valid inside run().
  OutputOptions& output_options() { return output_; }
  const OutputOptions& output_options() const { return output_; }
  // Register -o/--output (into `output`) and -f/--force on `app`.
  void add_output(CLI::App& app, std::string& output);
  // Register the metadata edits and, when `provenance`, --no-provenance on `app`.
  void add_metadata_options(CLI::App& app, bool provenance = true);
  // Refuse an existing output file without -f (check_output_new).
  void check_new_output(const std::string& output) const { check_output_new(output, output_.force); }
  // Everything a data output is checked for before any reading, in order: binary data
  // to a terminal, a directory, one of `inputs`, an existing file without -f.
  void check_output(const std::string& output, const std::vector<std::string>& inputs = {}) const;
  // The metadata of a composed output: edits, provenance and "format" (metadata_stamp).
  void stamp(io::Metadata& metadata) const { metadata_stamp(metadata, output_, provenance()); }

  // Rewrite the arguments (without argv[0]) before they are parsed: another tool's
  // spellings of the same flags (tcompress takes zstd's -19). Its errors are reported as
  // the body's are.
  void set_argument_filter(std::function<std::vector<std::string>(int argc, char** argv)> filter) {
    argument_filter_ = std::move(filter);
  }

  // Parse the command line and call `body`, whose return value is the exit code.
  // --help and --version print to stdout and return 0. A parse error prints
  // "TOOL: error: MESSAGE (see 'TOOL --help')" and returns 2; a tk::Error prints
  // "TOOL: error: WHAT (WHERE)" and returns exit_code_for(kind); std::bad_alloc
  // returns 5; any other exception "TOOL: error: internal error: ..." and 1. A write to
  // a closed pipe ends quietly with 141 (see signals.h). Standard output is flushed and
  // closed at the end; a failure there is an I/O error (4). Installs the signal handlers.
  int run(int argc, char** argv, const std::function<int()>& body);

  // The arguments after the program name, as given.
  const std::vector<std::string>& args() const { return args_; }
  // {name, version, args} for the output metadata.
  ProvenanceEntry provenance() const;

  // These print one line each, TEXT through escape_text (display_text.h).
  // "TOOL: TEXT" on stderr, unless -q.
  void summary(std::string_view text) const;
  // "TOOL: TEXT" on stderr when -v was given at least `level` times.
  void verbose(int level, std::string_view text) const;
  // "TOOL: warning: TEXT" on stderr, even with -q.
  void warning(std::string_view text) const;

 private:
  int run_body(int argc, char** argv, const std::function<int()>& body);
  int report(const std::exception_ptr& error);
  void print_error(std::string_view text) const;

  std::string name_;
  std::string gpu_work_;
  CLI::App app_;
  CommonOptions options_;
  OutputOptions output_;
  std::vector<std::string> args_;
  std::function<std::vector<std::string>(int, char**)> argument_filter_;
};

}  // namespace tk::cli
