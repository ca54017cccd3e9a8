// What an MPI launcher tells this process through its environment; shared by the MPI
// transport and the build without it.
#pragma once

namespace tk::dist {

// Whether an MPI launcher started this process.
bool launched_by_mpi();
// How many ranks the launcher says the job has (1 when no launcher says).
int launched_ranks();

}  // namespace tk::dist
