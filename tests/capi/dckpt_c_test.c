/* The distributed C API (tk_ckpt_dist.h) from C99 under mpirun -np 4: a save of row
 * slices, a replicated and a per-rank tensor; a restore by columns; bad input on one
 * rank failing on every rank with the same message; a bad descriptor; missing tensor.
 * Usage: tk_dckpt_c_test DIR (a fresh directory, shared by the ranks). Each rank prints
 * one line per failed check; the exit status is 1 on every rank when any rank failed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tk_ckpt_dist.h"

static int failures = 0;
static int rank = 0, world = 1;

#define CHECK(cond)                                                                                  \
  do {                                                                                               \
    if (!(cond)) {                                                                                   \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s (last error: %s)\n", rank, __FILE__, __LINE__, \
              #cond, tk_ckpt_last_error());                                                          \
      ++failures;                                                                                    \
    }                                                                                                \
  } while (0)

#define CHECK_RC(call, expected)                                                                       \
  do {                                                                                                 \
    int rc_ = (call);                                                                                  \
    if (rc_ != (expected)) {                                                                           \
      fprintf(stderr, "rank %d: %s:%d: %s returned %d, expected %d (last error: %s)\n", rank, __FILE__, \
              __LINE__, #call, rc_, (expected), tk_ckpt_last_error());                                 \
      ++failures;                                                                                      \
    }                                                                                                  \
  } while (0)

enum { ROWS = 301, COLS = 7 };
static const int64_t kShape[2] = {ROWS, COLS}, kBias[1] = {COLS}, kOwn[1] = {5};

static float w_at(uint64_t step, int64_t i, int64_t j) { return (float)(step * 10000 + (uint64_t)(i * COLS + j)); }

/* Uneven rows: rank r holds a share proportional to r + 1. */
static void rows_of(int r, int n, int64_t* first, int64_t* count) {
  int64_t total = (int64_t)n * (n + 1) / 2, before = (int64_t)r * (r + 1) / 2;
  *first = ROWS * before / total;
  *count = ROWS * (before + r + 1) / total - *first;
}

/* Every rank's last error must be the same: compare with rank 0's. */
static void check_same_message_everywhere(const char* needle) {
  char mine[512] = {0}, zeros[512] = {0};
  strncpy(mine, tk_ckpt_last_error(), sizeof mine - 1);
  memcpy(zeros, mine, sizeof zeros);
  MPI_Bcast(zeros, sizeof zeros, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(strcmp(mine, zeros) == 0);
  CHECK(strstr(mine, needle) != NULL);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (argc != 2) {
    fprintf(stderr, "usage: tk_dckpt_c_test DIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* dir = argv[1];

  tk_dckpt* ck = NULL;
  CHECK_RC(tk_dckpt_open(dir, MPI_Comm_c2f(MPI_COMM_WORLD), NULL, &ck), TK_CKPT_OK);
  if (!ck) MPI_Abort(MPI_COMM_WORLD, 1);
  uint64_t step = 99;
  CHECK_RC(tk_dckpt_latest(ck, &step), TK_CKPT_NONE);

  int64_t first, count;
  rows_of(rank, world, &first, &count);
  float* w = malloc(sizeof(float) * (size_t)(count * COLS) + 1);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < COLS; ++j) w[i * COLS + j] = w_at(1, first + i, j);
  float bias[COLS];
  for (int j = 0; j < COLS; ++j) bias[j] = (float)j;
  double own[5];
  for (int k = 0; k < 5; ++k) own[k] = rank * 100 + k;
  char own_name[32];
  snprintf(own_name, sizeof own_name, "own.%d", rank);
  int64_t off[2] = {first, 0}, shape[2] = {count, COLS};
  tk_dckpt_slice slices[3] = {
      {"w", "F32", 2, kShape, off, shape, w, sizeof(float) * (uint64_t)(count * COLS), 0},
      {"b", "F32", 1, kBias, NULL, NULL, bias, sizeof bias, 1},
      {own_name, "F64", 1, kOwn, NULL, NULL, own, sizeof own, 0},
  };

  /* A good step. */
  CHECK_RC(tk_dckpt_save_async(ck, 1, slices, 3), TK_CKPT_OK);
  for (int64_t k = 0; k < count * COLS; ++k) w[k] = -1;  /* copied: the caller may change it at once */
  tk_dckpt_stats st;
  memset(&st, 0, sizeof st);
  CHECK_RC(tk_dckpt_wait(ck, &st), TK_CKPT_OK);
  CHECK(st.step == 1);
  CHECK(st.step_bytes == sizeof(float) * ROWS * COLS + sizeof bias + sizeof own * (uint64_t)world);
  CHECK_RC(tk_dckpt_latest(ck, &step), TK_CKPT_OK);
  CHECK(step == 1);
  uint64_t saved_world = 0;
  CHECK_RC(tk_dckpt_step_world_size(ck, 1, &saved_world), TK_CKPT_OK);
  CHECK(saved_world == (uint64_t)world);

  /* Restore by columns: rank r wants column r % COLS, all rows, plus b and rank 0's own. */
  {
    int64_t col = rank % COLS, coff[2] = {0, col}, cshape[2] = {ROWS, 1};
    float column[ROWS], b2[COLS];
    double own0[5];
    tk_dckpt_slice want[3] = {
        {"w", "F32", 2, kShape, coff, cshape, column, sizeof column, 0},
        {"b", "F32", 1, kBias, NULL, NULL, b2, sizeof b2, 0},
        {"own.0", "F64", 1, kOwn, NULL, NULL, own0, sizeof own0, 0},
    };
    CHECK_RC(tk_dckpt_restore(ck, 1, want, 3), TK_CKPT_OK);
    for (int64_t i = 0; i < ROWS; ++i) CHECK(column[i] == w_at(1, i, col));
    CHECK(memcmp(b2, bias, sizeof b2) == 0);
    for (int k = 0; k < 5; ++k) CHECK(own0[k] == k);
    /* Wrong dtype, missing tensor, box too large for the buffer. */
    want[0].dtype = "F64";
    CHECK_RC(tk_dckpt_restore(ck, 1, want, 1), TK_CKPT_ERR_USAGE);
    want[0].dtype = "F32";
    want[0].name = "nope";
    CHECK_RC(tk_dckpt_restore(ck, 1, want, 1), TK_CKPT_ERR_INVALID_INPUT);
    want[0].name = "w";
    want[0].nbytes -= 4;
    CHECK_RC(tk_dckpt_restore(ck, 1, want, 1), TK_CKPT_ERR_USAGE);
  }

  /* Rank 2 passes a slice outside the global shape: it learns at once, and every rank
   * gets the same error from wait. No step 2. */
  int64_t bad_off[2] = {ROWS - 1, 0};
  slices[0].offsets = rank == 2 ? bad_off : off;
  CHECK_RC(tk_dckpt_save_async(ck, 2, slices, 3), rank == 2 ? TK_CKPT_ERR_USAGE : TK_CKPT_OK);
  CHECK_RC(tk_dckpt_wait(ck, NULL), TK_CKPT_ERR_USAGE);
  check_same_message_everywhere("rank 2: slice [300:");
  slices[0].offsets = off;

  /* The last rank says I32 where the others say F32 (the same element size). */
  slices[0].dtype = rank == world - 1 ? "I32" : "F32";
  CHECK_RC(tk_dckpt_save_async(ck, 2, slices, 3), TK_CKPT_OK);
  CHECK_RC(tk_dckpt_wait(ck, NULL), TK_CKPT_ERR_USAGE);
  check_same_message_everywhere("as I32");
  slices[0].dtype = "F32";

  /* A malformed descriptor on rank 1 (unknown dtype) still fails everywhere. */
  slices[1].dtype = rank == 1 ? "F33" : "F32";
  CHECK_RC(tk_dckpt_save_async(ck, 2, slices, 3), rank == 1 ? TK_CKPT_ERR_USAGE : TK_CKPT_OK);
  CHECK_RC(tk_dckpt_wait(ck, NULL), TK_CKPT_ERR_USAGE);
  check_same_message_everywhere("rank 1: unknown dtype 'F33'");
  slices[1].dtype = "F32";

  CHECK_RC(tk_dckpt_latest(ck, &step), TK_CKPT_OK);
  CHECK(step == 1);
  /* Steps must increase; then a good step 2 commits after the failures. */
  CHECK_RC(tk_dckpt_save_async(ck, 1, slices, 3), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_dckpt_wait(ck, NULL), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_dckpt_save_async(ck, 2, slices, 3), TK_CKPT_OK);
  CHECK_RC(tk_dckpt_close(ck), TK_CKPT_OK);  /* commits the pending save */

  CHECK_RC(tk_dckpt_open(dir, MPI_Comm_c2f(MPI_COMM_WORLD), NULL, &ck), TK_CKPT_OK);
  CHECK_RC(tk_dckpt_latest(ck, &step), TK_CKPT_OK);
  CHECK(step == 2);
  /* A lazy save: the copy is taken in the background; once tk_dckpt_snapshot_wait
   * returns the caller may change its memory, and the step holds the values of the save. */
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < COLS; ++j) w[i * COLS + j] = w_at(3, first + i, j);
  CHECK_RC(tk_dckpt_save_lazy(ck, 3, slices, 3), TK_CKPT_OK);
  CHECK_RC(tk_dckpt_snapshot_wait(ck), TK_CKPT_OK);
  for (int64_t k = 0; k < count * COLS; ++k) w[k] = -1;
  CHECK_RC(tk_dckpt_wait(ck, &st), TK_CKPT_OK);
  CHECK(st.step == 3 && st.stall_seconds >= 0);
  CHECK_RC(tk_dckpt_snapshot_wait(ck), TK_CKPT_OK); /* none pending */
  {
    int64_t col = (rank + 1) % COLS, coff[2] = {0, col}, cshape[2] = {ROWS, 1};
    float column[ROWS];
    tk_dckpt_slice want = {"w", "F32", 2, kShape, coff, cshape, column, sizeof column, 0};
    CHECK_RC(tk_dckpt_restore(ck, 3, &want, 1), TK_CKPT_OK);
    for (int64_t i = 0; i < ROWS; ++i) CHECK(column[i] == w_at(3, i, col));
  }
  CHECK_RC(tk_dckpt_close(ck), TK_CKPT_OK);
  CHECK_RC(tk_dckpt_close(NULL), TK_CKPT_OK);

  /* Tiers: ranks 0-1 and 2-3 each share a "node-local" directory in front of a shared
   * one; two steps, the shared tier keeping the newest only. */
  {
    char shared[4096], local[4096];
    snprintf(shared, sizeof shared, "%s-tiers-shared", dir);
    snprintf(local, sizeof local, "%s-tiers-node-%c", dir, rank < 2 ? 'a' : 'b');
    tk_dckpt_options o;
    tk_dckpt_options_init(&o);
    CHECK(o.local_dir == NULL && o.keep_last == 0 && o.staging_bytes == 0);
    o.local_dir = local;
    o.staging_bytes = sizeof(float) * (uint64_t)(count * COLS);
    o.keep_last = 1;
    CHECK_RC(tk_dckpt_open(shared, MPI_Comm_c2f(MPI_COMM_WORLD), &o, &ck), TK_CKPT_OK);
    for (uint64_t s = 1; s <= 2; ++s) {
      for (int64_t i = 0; i < count; ++i)
        for (int64_t j = 0; j < COLS; ++j) w[i * COLS + j] = w_at(s, first + i, j);
      CHECK_RC(tk_dckpt_save_async(ck, s, slices, 3), TK_CKPT_OK);
      CHECK_RC(tk_dckpt_wait(ck, NULL), TK_CKPT_OK);
    }
    double lag = -1;
    CHECK_RC(tk_dckpt_step_lag(ck, 7, &lag), TK_CKPT_ERR_USAGE);
    CHECK_RC(tk_dckpt_flush(ck), TK_CKPT_OK);
    tk_ckpt_flush_report report;
    CHECK_RC(tk_dckpt_flush_status(ck, &report), TK_CKPT_OK);
    CHECK(report.has_latest_committed && report.latest_committed == 2);
    CHECK(report.has_latest_durable && report.latest_durable == 2);
    CHECK(report.pending == 0);
    for (uint64_t s = 1; s <= 2; ++s) {
      CHECK_RC(tk_dckpt_step_lag(ck, s, &lag), TK_CKPT_OK);
      CHECK(lag >= 0 && lag < 300);
    }
    CHECK_RC(tk_dckpt_latest(ck, &step), TK_CKPT_OK);
    CHECK(step == 2);
    float* back = malloc(sizeof(float) * (size_t)(count * COLS) + 1);
    tk_dckpt_slice want = slices[0];
    want.data = back;
    CHECK_RC(tk_dckpt_restore(ck, 2, &want, 1), TK_CKPT_OK);
    CHECK(memcmp(back, w, sizeof(float) * (size_t)(count * COLS)) == 0);
    free(back);
    CHECK_RC(tk_dckpt_close(ck), TK_CKPT_OK);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      char path[4200];
      snprintf(path, sizeof path, "%s/step-1", shared);
      CHECK(access(path, F_OK) != 0); /* keep_last 1 */
      snprintf(path, sizeof path, "%s/step-2/manifest.json", shared);
      CHECK(access(path, F_OK) == 0);
      snprintf(path, sizeof path, "%s/step-2/rank-%05d.safetensors", shared, world - 1);
      CHECK(access(path, F_OK) == 0);
      snprintf(path, sizeof path, "%s/step-1", local);
      CHECK(access(path, F_OK) != 0); /* node-local copies of flushed steps go */
    }
  }

  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(any ? "%d checks failed\n" : "all checks passed\n", any);
  free(w);
  MPI_Finalize();
  return any ? 1 : 0;
}
