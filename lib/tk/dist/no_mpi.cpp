// tk::dist without MPI (TK_MPI off): the transport answers "not compiled in".
#include "tk/core/error.h"
#include "tk/dist/comm.h"

namespace tk::dist {

bool mpi_available() { return false; }

std::unique_ptr<Comm> mpi_comm(int) { throw unavailable("MPI support is not compiled in (build with TK_MPI=ON)"); }

}  // namespace tk::dist
