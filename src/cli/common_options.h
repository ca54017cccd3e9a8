// The flags every tool and subcommand accepts (docs/ARCHITECTURE.md, "CLI contract"), parsed into
// one struct shared by the tool's app and all its subcommands.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/device.h"
#include "cli/selection.h"

namespace tk::cli {

struct CommonOptions {
  std::vector<std::string> tensors;  // -t/--tensors GLOB, repeatable
  std::vector<std::string> exclude;  // --exclude GLOB, repeatable
  int threads = 0;                   // -j/--threads N; 0: the OpenMP default
  std::string device_text = "auto";  // --device cpu|cuda[:N]|auto
  std::optional<uint64_t> seed;      // --seed N
  std::optional<std::string> json;   // --json PATH|-
  bool quiet = false;                // -q: no summaries on stderr
  int verbose = 0;                   // -v, repeatable
  std::optional<bool> progress;      // --progress / --no-progress

  // Set by apply_common_options after parsing.
  Device device;
  bool show_progress = false;

  // True unless `--json -` puts the JSON report on stdout in place of the text report.
  bool text_report() const { return !json || *json != "-"; }
  // kUsage when `--json -` and the data output `output` would both go to stdout.
  void check_one_stdout(const std::string& output) const;
  TensorSelection selection() const { return TensorSelection(tensors, exclude); }
};

// Register the common flags on `app` (a tool or a subcommand), writing into `options`.
// Repeatable flags append, so flags given before and after a subcommand name combine.
void add_common_options(CLI::App& app, CommonOptions& options);

// --device's help: what runs on the GPU (empty: nothing, the tool computes on the CPU).
std::string device_help(const std::string& gpu_work);

// Validate and act on the parsed flags: parse --device (kUsage, or kUnavailable for
// CUDA in a build without it), set the OpenMP thread count, decide whether progress is
// shown (explicit flag, else stderr is a terminal and not -q).
void apply_common_options(CommonOptions& options, bool stderr_is_terminal);

}  // namespace tk::cli
