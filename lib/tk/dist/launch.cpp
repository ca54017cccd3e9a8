// What the MPI launcher tells a process through its environment, with or without MPI.
#include "tk/dist/launch.h"

#include <cstdlib>

namespace tk::dist {

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 0 && n < (1L << 30) ? static_cast<int>(n) : -1;
}

}  // namespace

bool launched_by_mpi() {
  // OpenMPI's mpirun, PMIx (srun --mpi=pmix, prterun), PMI-1/2 (srun --mpi=pmi2, MPICH).
  return env_int("OMPI_COMM_WORLD_SIZE") >= 0 || std::getenv("PMIX_RANK") != nullptr || env_int("PMI_SIZE") >= 0;
}

int launched_ranks() {
  int n = env_int("OMPI_COMM_WORLD_SIZE");
  if (n < 1) n = env_int("PMI_SIZE");
  // PMIx names no size in the environment; under srun, Slurm does.
  if (n < 1 && std::getenv("PMIX_RANK") != nullptr) n = env_int("SLURM_STEP_NUM_TASKS");
  return n >= 1 ? n : 1;
}

}  // namespace tk::dist
