// tcompress store: the deduplicating model store (lib/tk/store/store.h) from the command
// line: `tcompress store add|get|ls|rm|gc|stats|verify --store DIR`.
#pragma once

#include "cli/tool.h"

namespace tk::tcompress {

// The parsed flags of `tcompress store ...`; defined in store.cpp.
struct StoreCommand;

// Register the `store` subcommand and its subcommands add, get, ls, rm, gc, stats and
// verify, each taking --store DIR, on `tool`. The returned object lives until the
// program exits.
StoreCommand* add_store_command(cli::Tool& tool);

// Whether the command line chose `store` (valid once `tool` has parsed it).
bool store_parsed(const StoreCommand* cmd);

// Run the chosen store subcommand; returns the exit code.
int run_store(cli::Tool& tool, StoreCommand* cmd);

}  // namespace tk::tcompress
