/* A hanging rank under mpirun: the last rank sleeps through the commit, the others must
 * fail from tk_dckpt_wait with TK_CKPT_ERR_RUNTIME "timed out" within about the 1 s
 * timeout instead of hanging, and no step may be visible. Usage: tk_dckpt_timeout_test
 * DIR. Prints "rank R: timed out after S s" per rank; exit 1 on any failed check. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tk_ckpt_dist.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1, failures = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  tk_dckpt_options options;
  tk_dckpt_options_init(&options);
  options.timeout_seconds = 1.0;
  tk_dckpt* ck = NULL;
  if (argc != 2 || tk_dckpt_open(argv[1], MPI_Comm_c2f(MPI_COMM_WORLD), &options, &ck) != TK_CKPT_OK) {
    fprintf(stderr, "rank %d: open failed: %s\n", rank, tk_ckpt_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  float x[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  tk_dckpt_slice s = {"x", "F32", 1, shape, NULL, NULL, x, sizeof x, 1};
  if (tk_dckpt_save_async(ck, 1, &s, 1) != TK_CKPT_OK) ++failures;
  if (rank == world - 1) sleep(4); /* hangs past everyone's deadline */
  double t0 = MPI_Wtime();
  int rc = tk_dckpt_wait(ck, NULL);
  double waited = MPI_Wtime() - t0;
  if (rc != TK_CKPT_ERR_RUNTIME || !strstr(tk_ckpt_last_error(), "timed out")) {
    fprintf(stderr, "rank %d: wait returned %d (%s), expected a timeout\n", rank, rc, tk_ckpt_last_error());
    ++failures;
  }
  if (waited > 3.0) {
    fprintf(stderr, "rank %d: the timeout took %.1f s\n", rank, waited);
    ++failures;
  }
  uint64_t step = 0;
  if (tk_dckpt_latest(ck, &step) != TK_CKPT_NONE) {
    fprintf(stderr, "rank %d: a step is visible after the timeout\n", rank);
    ++failures;
  }
  if (tk_dckpt_save_async(ck, 2, &s, 1) != TK_CKPT_ERR_RUNTIME) ++failures; /* broken */
  printf("rank %d: timed out after %.1f s\n", rank, waited);
  fflush(stdout);
  tk_dckpt_close(ck);
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
