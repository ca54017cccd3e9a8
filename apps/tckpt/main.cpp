// tckpt: asynchronous, crash-consistent, multi-level checkpoints from the command line.
#include "tckpt.h"

namespace {

void add_engine_flags(CLI::App* cmd, tk::tckpt::EngineFlags& e, bool writing) {
  cmd->add_option("--keep-last", e.keep_last, "Retention: keep the newest K steps (0: all)")->type_name("K");
  cmd->add_option("--keep-every", e.keep_every, "Retention: also keep every step divisible by M")->type_name("M");
  if (!writing) return;
  cmd->add_option("--durable", e.durable, "Also commit each step to this durable tier (copied after the commit)")
      ->type_name("DIR2");
  cmd->add_option("--compress", e.compress, "Store tensors compressed: none (default) or lossless")
      ->type_name("none|lossless")
      ->check(CLI::IsMember({"none", "lossless"}));
  cmd->add_flag("--incremental", e.incremental,
                "Store only tensors changed since the last full step (XOR deltas where they pay)");
  cmd->add_option("--full-every", e.full_every, "Incremental: every N-th step is full (default 10)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--shard-size", e.shard_size, "Split a step's data into shards of about BYTES (e.g. 4GiB)")
      ->type_name("BYTES");
}

}  // namespace

int main(int argc, char** argv) {
  tk::cli::Tool tool("tckpt", "Save, list, restore, verify and prune crash-consistent tensor checkpoints");
  tool.set_examples({
      {"tckpt save ckpt/ --step 100 state.safetensors", "Commit step 100"},
      {"tckpt ls ckpt/", "Steps, sizes and state"},
      {"tckpt restore ckpt/ -o state.safetensors", "The newest step, every checksum checked first"},
  });
  tool.app().require_subcommand(1);

  tk::tckpt::SaveOptions save;
  CLI::App* save_cmd = tool.add_subcommand("save", "Save the tensors of INPUT files as step N of checkpoint DIR");
  save_cmd->add_option("DIR", save.dir, "Checkpoint directory (created when missing)")->required();
  save_cmd->add_option("inputs", save.inputs, "Tensor files ('-': stdin, the default); their tensors are merged")
      ->type_name("INPUT...");
  save_cmd->add_option("--step", save.step, "Step number (default: one after the newest)")->type_name("N");
  save_cmd->add_option("--metadata", save.metadata, "Store KEY=VALUE with the step (repeatable)")
      ->type_name("KEY=VALUE");
  add_engine_flags(save_cmd, save.engine, true);

  tk::tckpt::StepOptions ls;
  CLI::App* ls_cmd = tool.add_subcommand("ls", "List the committed steps of DIR");
  ls_cmd->add_option("DIR", ls.dir, "Checkpoint directory")->required();
  ls_cmd->add_option("--durable", ls.durable, "Mark steps also committed in this durable tier as flushed (default: the tier the writer recorded)")
      ->type_name("DIR2");

  tk::tckpt::StepOptions restore;
  CLI::App* restore_cmd = tool.add_subcommand("restore", "Write step N of DIR (default: the newest) to a tensor file");
  restore_cmd->add_option("DIR", restore.dir, "Checkpoint directory")->required();
  restore_cmd->add_option("--step", restore.step, "Step to restore (default: the newest)")->type_name("N");
  tool.add_output(*restore_cmd, restore.output);
  tool.add_metadata_options(*restore_cmd, false);
  restore_cmd->add_option("--format", restore.format, "Output format (default: from OUT)")
      ->type_name("safetensors|hdf5|npy");

  tk::tckpt::StepOptions verify;
  CLI::App* verify_cmd = tool.add_subcommand("verify", "Check every checksum of step N (default: every step)");
  verify_cmd->add_option("DIR", verify.dir, "Checkpoint directory")->required();
  verify_cmd->add_option("--step", verify.step, "Step to verify")->type_name("N");

  tk::tckpt::GcOptions gc;
  CLI::App* gc_cmd = tool.add_subcommand("gc", "Apply retention to DIR and remove what killed writers left");
  gc_cmd->add_option("DIR", gc.dir, "Checkpoint directory")->required();
  add_engine_flags(gc_cmd, gc.engine, false);

  tk::tckpt::FlushOptions flush;
  CLI::App* flush_cmd = tool.add_subcommand("flush", "Copy the committed steps of DIR missing in DIR2 to DIR2");
  flush_cmd->add_option("DIR", flush.dir, "Checkpoint directory")->required();
  flush_cmd->add_option("--to", flush.to, "Durable checkpoint directory (created when missing)")
      ->type_name("DIR2")
      ->required();

  tk::tckpt::BenchOptions bench;
  CLI::App* bench_cmd = tool.add_subcommand(
      "bench", "Measure save stall, synchronous save, flush and restore against the raw disk bandwidth");
  bench_cmd->add_option("--dir", bench.dir, "Directory to measure (default: a new one under $TMPDIR)")
      ->type_name("DIR");
  bench_cmd->add_option("--durable", bench.durable, "Second tier for the flush (default: beside --dir)")
      ->type_name("DIR2");
  bench_cmd->add_option("--size", bench.size, "Bytes of state (default 1GiB)")->type_name("BYTES");
  bench_cmd->add_option("--count", bench.tensors, "Number of tensors in the state (default 64)")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--repeat", bench.repeat, "Repetitions; medians are reported (default 3)")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--changed", bench.changed, "Share of tensors changed per incremental step (default 0.1)")
      ->check(CLI::Range(0.0, 1.0));
  bench_cmd->add_flag("--keep", bench.keep, "Keep the checkpoint directories written");

  return tool.run(argc, argv, [&] {
    if (save_cmd->parsed()) return tk::tckpt::run_save(tool, save);
    if (ls_cmd->parsed()) return tk::tckpt::run_ls(tool, ls);
    if (restore_cmd->parsed()) return tk::tckpt::run_restore(tool, restore);
    if (verify_cmd->parsed()) return tk::tckpt::run_verify(tool, verify);
    if (gc_cmd->parsed()) return tk::tckpt::run_gc(tool, gc);
    if (flush_cmd->parsed()) return tk::tckpt::run_flush(tool, flush);
    return tk::tckpt::run_bench(tool, bench);
  });
}
