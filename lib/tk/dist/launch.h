// Whether an MPI launcher started this process (its environment says so); shared by the
// MPI transport and the build without it.
#pragma once

namespace tk::dist {

bool launched_by_mpi();

}  // namespace tk::dist
