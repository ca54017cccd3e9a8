// tk::dist without MPI (TK_MPI off): the transport answers "not compiled in".
#include <string>

#include "tk/core/error.h"
#include "tk/dist/comm.h"
#include "tk/dist/launch.h"

namespace tk::dist {

bool mpi_available() { return false; }

std::unique_ptr<Comm> world() {
  const int ranks = launched_ranks();
  if (ranks > 1)
    throw unavailable("started as one of " + std::to_string(ranks) +
                      " MPI ranks, but this build has no MPI (build with TK_MPI=ON and an MPI installed)");
  return nullptr;
}

std::unique_ptr<Comm> mpi_comm(int) { throw unavailable("MPI support is not compiled in (build with TK_MPI=ON)"); }

}  // namespace tk::dist
