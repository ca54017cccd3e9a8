// tckpt: save, list, restore, verify, prune and flush crash-consistent checkpoints of
// named tensors (lib/tk/ckpt), and measure them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/tool.h"

namespace tk::tckpt {

// Engine options shared by the subcommands that write.
struct EngineFlags {
  std::string durable;           // --durable DIR2
  uint32_t keep_last = 0;        // --keep-last K
  uint32_t keep_every = 0;       // --keep-every M
  std::string compress = "none"; // --compress none|lossless
  bool incremental = false;      // --incremental
  uint32_t full_every = 10;      // --full-every N
  std::string shard_size;        // --shard-size BYTES
};

struct SaveOptions {
  std::string dir;
  std::optional<uint64_t> step;
  std::vector<std::string> inputs;
  std::vector<std::string> metadata;  // --metadata KEY=VALUE
  EngineFlags engine;
};

struct StepOptions {  // ls, restore, verify
  std::string dir;
  std::optional<uint64_t> step;
  std::string output = "-";
  std::string format;
  std::string durable;
};

struct GcOptions {
  std::string dir;
  EngineFlags engine;
};

struct FlushOptions {
  std::string dir;
  std::string to;
};

struct BenchOptions {
  std::string dir;        // where to write (default: a temporary directory in $TMPDIR)
  std::string durable;    // second tier for the flush measurement (default: beside dir)
  std::string size = "1GiB";
  int tensors = 64;
  int repeat = 3;
  double changed = 0.10;  // share of tensors changed per incremental step
  bool keep = false;      // keep the bench directories
};

int run_save(cli::Tool& tool, const SaveOptions& o);
int run_ls(cli::Tool& tool, const StepOptions& o);
int run_restore(cli::Tool& tool, const StepOptions& o);
int run_verify(cli::Tool& tool, const StepOptions& o);
int run_gc(cli::Tool& tool, const GcOptions& o);
int run_flush(cli::Tool& tool, const FlushOptions& o);
int run_bench(cli::Tool& tool, const BenchOptions& o);

}  // namespace tk::tckpt
