// OpenMP waiting that yields the core, for machines whose cores are shared.
//
// libgomp's default has a thread that reaches a barrier spin for up to 300,000
// iterations (milliseconds) before it sleeps. On a machine where another process holds a
// core (a CI runner, a login node, the other stages of a pipeline) the spinning thread
// takes the core its partner needs to finish, so every parallel region waits for a
// thread the scheduler has put aside: with two threads the tools ran 1.5-37x slower than
// with one (docs/BENCHMARKS.md, "Threads on a loaded machine"). A passive policy sleeps
// at once; a sleeper that is woken is scheduled promptly, and the idle-machine cost is a
// futex wake per region.
//
// libgomp reads its policy from the environment once, in its constructor, before main,
// and the C library adopts the environment array it was started with only in its own
// constructor, so a setenv before the libraries load is lost. So each tool's executable
// runs set_passive_waiting from its .preinit_array, which the dynamic loader calls before
// any library's constructor. When neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, it
// lends the slot of `_` (the program's path, which shells put in every command's
// environment and no library reads) to OMP_WAIT_POLICY=passive; restore_environment, an
// executable constructor that runs after every library's and before the program's own,
// gives the slot back and sets the variable properly, for the processes a tool starts.
// Started without `_` (by a program, not a shell), the tool executes itself again with
// the variable added, which costs one more start (about 20 ms here). A policy the user
// set is kept: OMP_WAIT_POLICY=active on a dedicated node opts out.
// `OMP_DISPLAY_ENV=verbose TOOL --version` shows what libgomp took (GOMP_SPINCOUNT =
// '0' when passive).
#pragma once

namespace tk::cli {

// As above. Its signature is that of a .preinit_array entry; tool.cpp holds the entry.
void set_passive_waiting(int argc, char** argv, char** envp);

}  // namespace tk::cli
