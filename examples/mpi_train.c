/* mpi_train: a training-style MPI job that checkpoints through the C API of libtkckpt
 * (tk_ckpt_dist.h) and resumes from the newest step on any number of ranks.
 *
 *   mpi_train --dir DIR --steps N --every K [--local DIR] [--lazy] [--sleep-ms MS] [--timeout S] [--check]
 *             [--stats]
 *
 * State: "w" F32 [1000, 37] split by rows, "v" F64 [24, 333] split by columns (both
 * unevenly: rank r of W holds a share proportional to r + 1), "b" F32 [37] replicated
 * on every rank, and "opt.rR" I64 [64], whole on rank R. Every value is a function of
 * (step, global index), so whoever restores a step can check it bit for bit.
 *
 * On start it restores the newest committed step (saved by any number of ranks),
 * checks every value and prints "resumed from step S (saved by W ranks)", or
 * "starting fresh". Then it runs steps S+1..N (sleeping MS per step), saves every K-th
 * step asynchronously (committed while the next steps run; rank 0 prints "committed
 * step S") and prints "done step N" at the end. On SIGUSR1 or SIGTERM it finishes the
 * current step, saves it (if not saved already), prints "saved step S on signal" and
 * exits 0. The ranks agree on the signal once per step (MPI_Allreduce), so they stop
 * at the same step even when the signal reaches them at different times.
 *
 * --local DIR: a node-local first tier (e.g. $SLURM_TMPDIR): steps commit there and are
 * flushed to --dir in the background; before it exits (at the end or on a signal) the
 * job waits for the flush, prints "durable step S" and, with --stats, the mean
 * durability lag per step, so that a requeued job finds its last step on --dir.
 *
 * --lazy: save with tk_dckpt_save_lazy: the copy of the state is taken in the background
 * while the next step's passes run (the sleep), and the step waits for it
 * (tk_dckpt_snapshot_wait) before it updates the state.
 *
 * --stats: at the end, print the mean stall, background write and commit time per
 * checkpoint (the largest over the ranks).
 *
 * --check: restore and check the newest step, print "checked step S on W ranks" and
 * exit (3 when there is no step or a value differs). Messages come from rank 0; errors
 * from any rank, as "mpi_train: error: ..." on stderr, exit 3 for a wrong value, 1 for
 * a failed checkpoint call, 2 for bad arguments.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tk_ckpt_dist.h"

enum { W_ROWS = 1000, W_COLS = 37, V_ROWS = 24, V_COLS = 333, OPT_LEN = 64 };

static volatile sig_atomic_t g_signalled = 0;
static int g_rank = 0;

static void on_signal(int sig) {
  (void)sig;
  g_signalled = 1;
}

static void die(int code, const char* what, const char* detail) {
  fprintf(stderr, "mpi_train: error: rank %d: %s%s%s\n", g_rank, what, detail ? ": " : "", detail ? detail : "");
  MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}

static void check_call(int status, const char* what) {
  if (status != TK_CKPT_OK) die(1, what, tk_ckpt_last_error());
}

/* The values of step `step`, as functions of the global index. Exact in their dtypes. */
static float w_value(uint64_t step, int64_t i, int64_t j) {
  return (float)((step * 7919u + (uint64_t)(i * W_COLS + j) * 31u) % 16777216u);
}
static double v_value(uint64_t step, int64_t i, int64_t j) { return (double)step * 1e6 + (double)(i * V_COLS + j) + 0.25; }
static float b_value(uint64_t step, int64_t j) { return (float)(step % 4096) + (float)j / 64.0f; }
static int64_t opt_value(uint64_t step, int rank, int64_t k) { return (int64_t)step * 100000 + rank * 1000 + k; }

/* Rank r of `world`'s share of `n` items: proportional to r + 1, so that no two
 * consecutive world sizes split alike and the split does not divide evenly. */
static void share(int64_t n, int world, int r, int64_t* first, int64_t* count) {
  int64_t total = (int64_t)world * (world + 1) / 2;
  int64_t before = (int64_t)r * (r + 1) / 2;
  *first = n * before / total;
  *count = n * (before + r + 1) / total - *first;
}

typedef struct {
  int rank, world;
  int64_t w_first, w_rows, v_first, v_cols;
  float* w;
  double* v;
  float b[W_COLS];
  int64_t opt[OPT_LEN];
} State;

static void fill(State* s, uint64_t step) {
  for (int64_t i = 0; i < s->w_rows; ++i)
    for (int64_t j = 0; j < W_COLS; ++j) s->w[i * W_COLS + j] = w_value(step, s->w_first + i, j);
  for (int64_t i = 0; i < V_ROWS; ++i)
    for (int64_t j = 0; j < s->v_cols; ++j) s->v[i * s->v_cols + j] = v_value(step, i, s->v_first + j);
  for (int64_t j = 0; j < W_COLS; ++j) s->b[j] = b_value(step, j);
  for (int64_t k = 0; k < OPT_LEN; ++k) s->opt[k] = opt_value(step, s->rank, k);
}

/* Bit-for-bit comparison with what fill() makes for `step`; `opt_saved`: whether this
 * rank's optimizer state was in the step (a rank beyond the saving world size starts
 * its own afresh). */
static int matches(const State* s, uint64_t step, int opt_saved) {
  State want = *s;
  want.w = malloc(sizeof(float) * (size_t)(s->w_rows * W_COLS) + 1);
  want.v = malloc(sizeof(double) * (size_t)(V_ROWS * s->v_cols) + 1);
  if (!want.w || !want.v) die(1, "out of memory", NULL);
  fill(&want, step);
  int ok = memcmp(want.w, s->w, sizeof(float) * (size_t)(s->w_rows * W_COLS)) == 0 &&
           memcmp(want.v, s->v, sizeof(double) * (size_t)(V_ROWS * s->v_cols)) == 0 &&
           memcmp(want.b, s->b, sizeof want.b) == 0 && (!opt_saved || memcmp(want.opt, s->opt, sizeof want.opt) == 0);
  free(want.w);
  free(want.v);
  return ok;
}

static const int64_t kWShape[2] = {W_ROWS, W_COLS}, kVShape[2] = {V_ROWS, V_COLS}, kBShape[1] = {W_COLS},
                     kOptShape[1] = {OPT_LEN};

/* The slices of this rank's state; `opt_name` and the shape arrays must outlive them. */
static size_t describe(State* s, tk_dckpt_slice out[4], int64_t w_off[2], int64_t w_shape[2], int64_t v_off[2],
                       int64_t v_shape[2], char opt_name[32]) {
  memset(out, 0, 4 * sizeof *out);
  w_off[0] = s->w_first, w_off[1] = 0, w_shape[0] = s->w_rows, w_shape[1] = W_COLS;
  v_off[0] = 0, v_off[1] = s->v_first, v_shape[0] = V_ROWS, v_shape[1] = s->v_cols;
  snprintf(opt_name, 32, "opt.r%d", s->rank);
  out[0] = (tk_dckpt_slice){"w", "F32", 2, kWShape, w_off, w_shape, s->w, sizeof(float) * (uint64_t)(s->w_rows * W_COLS), 0};
  out[1] = (tk_dckpt_slice){"v", "F64", 2, kVShape, v_off, v_shape, s->v, sizeof(double) * (uint64_t)(V_ROWS * s->v_cols), 0};
  out[2] = (tk_dckpt_slice){"b", "F32", 1, kBShape, NULL, NULL, s->b, sizeof s->b, 1};
  out[3] = (tk_dckpt_slice){opt_name, "I64", 1, kOptShape, NULL, NULL, s->opt, sizeof s->opt, 0};
  return 4;
}

static void sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static long parse_number(const char* flag, const char* text) {
  char* end = NULL;
  long v = text ? strtol(text, &end, 10) : -1;
  if (!text || *end != '\0' || v < 0) {
    if (g_rank == 0) fprintf(stderr, "mpi_train: error: %s needs a non-negative integer\n", flag);
    MPI_Finalize();
    exit(2);
  }
  return v;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const char* dir = NULL;
  const char* local = NULL;
  long steps = -1, every = 0, sleep = 0, timeout = 300;
  int check_only = 0, stats = 0, lazy = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--dir") && next) dir = argv[++i];
    else if (!strcmp(a, "--local") && next) local = argv[++i];
    else if (!strcmp(a, "--steps")) steps = parse_number(a, next), ++i;
    else if (!strcmp(a, "--every")) every = parse_number(a, next), ++i;
    else if (!strcmp(a, "--sleep-ms")) sleep = parse_number(a, next), ++i;
    else if (!strcmp(a, "--timeout")) timeout = parse_number(a, next), ++i;
    else if (!strcmp(a, "--check")) check_only = 1;
    else if (!strcmp(a, "--stats")) stats = 1;
    else if (!strcmp(a, "--lazy")) lazy = 1;
    else {
      if (g_rank == 0)
        fprintf(stderr, "mpi_train: error: unknown argument '%s'\nusage: mpi_train --dir DIR --steps N --every K "
                        "[--local DIR] [--lazy] [--sleep-ms MS] [--timeout S] [--check] [--stats]\n", a);
      MPI_Finalize();
      return 2;
    }
  }
  if (!dir || (!check_only && (steps < 0 || every < 1))) {
    if (g_rank == 0) fprintf(stderr, "mpi_train: error: --dir, --steps and --every (>= 1) are required\n");
    MPI_Finalize();
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  State s;
  memset(&s, 0, sizeof s);
  s.rank = g_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &s.world);
  share(W_ROWS, s.world, s.rank, &s.w_first, &s.w_rows);
  share(V_COLS, s.world, s.rank, &s.v_first, &s.v_cols);
  s.w = malloc(sizeof(float) * (size_t)(s.w_rows * W_COLS) + 1);
  s.v = malloc(sizeof(double) * (size_t)(V_ROWS * s.v_cols) + 1);
  if (!s.w || !s.v) die(1, "out of memory", NULL);

  tk_dckpt_options options;
  tk_dckpt_options_init(&options);
  options.timeout_seconds = (double)timeout;
  options.local_dir = local;
  tk_dckpt* ck = NULL;
  check_call(tk_dckpt_open(dir, MPI_Comm_c2f(MPI_COMM_WORLD), &options, &ck), "tk_dckpt_open");

  tk_dckpt_slice slices[4];
  int64_t w_off[2], w_shape[2], v_off[2], v_shape[2];
  char opt_name[32];
  size_t n = describe(&s, slices, w_off, w_shape, v_off, v_shape, opt_name);

  uint64_t start = 0;
  int status = tk_dckpt_latest(ck, &start);
  if (status == TK_CKPT_OK) {
    uint64_t saved_world = 0;
    check_call(tk_dckpt_step_world_size(ck, start, &saved_world), "tk_dckpt_step_world_size");
    int opt_saved = (uint64_t)s.rank < saved_world;
    check_call(tk_dckpt_restore(ck, start, slices, opt_saved ? n : n - 1), "tk_dckpt_restore");
    if (!opt_saved)
      for (int64_t k = 0; k < OPT_LEN; ++k) s.opt[k] = opt_value(start, s.rank, k);
    if (!matches(&s, start, opt_saved)) die(3, "restored values differ from the saved ones", NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
      printf(check_only ? "checked step %llu on %d ranks (saved by %llu ranks)\n"
                        : "resumed from step %llu on %d ranks (saved by %llu ranks)\n",
             (unsigned long long)start, s.world, (unsigned long long)saved_world);
      fflush(stdout);
    }
  } else if (status == TK_CKPT_NONE) {
    if (check_only) die(3, "no committed step", dir);
    if (g_rank == 0) printf("starting fresh\n"), fflush(stdout);
  } else {
    check_call(status, "tk_dckpt_latest");
  }
  if (check_only) {
    check_call(tk_dckpt_close(ck), "tk_dckpt_close");
    free(s.w);
    free(s.v);
    MPI_Finalize();
    return 0;
  }

  int pending = 0, commits = 0;
  double sum_stall = 0, sum_write = 0, sum_commit = 0; /* this rank's, over its commits */
  uint64_t pending_step = 0, last_saved = status == TK_CKPT_OK ? start : 0;
  uint64_t step = status == TK_CKPT_OK ? start : 0;
  int (*save)(tk_dckpt*, uint64_t, const tk_dckpt_slice*, size_t) = lazy ? tk_dckpt_save_lazy : tk_dckpt_save_async;
  const char* save_name = lazy ? "tk_dckpt_save_lazy" : "tk_dckpt_save_async";
  int stop = 0;
  while (!stop && step < (uint64_t)steps) {
    ++step;
    sleep_ms(sleep);  /* the step's passes: the state is only read */
    /* The update: a lazy snapshot of the previous step must be taken by now. */
    if (pending) check_call(tk_dckpt_snapshot_wait(ck), "tk_dckpt_snapshot_wait");
    fill(&s, step);
    int mine = g_signalled, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    stop = any;
    if (pending) {  /* the previous save has had a step's time to finish in the background */
      tk_dckpt_stats st;
      check_call(tk_dckpt_wait(ck, &st), "tk_dckpt_wait");
      ++commits, sum_stall += st.stall_seconds, sum_write += st.write_seconds, sum_commit += st.commit_seconds;
      if (g_rank == 0) printf("committed step %llu\n", (unsigned long long)pending_step), fflush(stdout);
      pending = 0;
    }
    if (step % (uint64_t)every == 0 || stop || step == (uint64_t)steps) {
      status = save(ck, step, slices, n);
      pending = 1, pending_step = step;
      if (status != TK_CKPT_OK) {
        /* Every rank still calls wait, which fails on all of them. */
        fprintf(stderr, "mpi_train: error: rank %d: %s: %s\n", g_rank, save_name, tk_ckpt_last_error());
      }
      last_saved = step;
    }
  }
  if (pending) {
    tk_dckpt_stats st;
    check_call(tk_dckpt_wait(ck, &st), "tk_dckpt_wait");
    ++commits, sum_stall += st.stall_seconds, sum_write += st.write_seconds, sum_commit += st.commit_seconds;
    if (g_rank == 0) printf("committed step %llu\n", (unsigned long long)pending_step), fflush(stdout);
  }
  double mean_lag = 0;
  if (local) {
    check_call(tk_dckpt_flush(ck), "tk_dckpt_flush");
    tk_ckpt_flush_report report;
    check_call(tk_dckpt_flush_status(ck, &report), "tk_dckpt_flush_status");
    /* The lag of each step this job committed (the steps that were saved). */
    int lags = 0;
    for (uint64_t k = 1; k <= step; ++k) {
      double lag = 0;
      if (tk_dckpt_step_lag(ck, k, &lag) == TK_CKPT_OK) mean_lag += lag, ++lags;
    }
    if (lags) mean_lag /= lags;
    if (g_rank == 0 && report.has_latest_durable)
      printf("durable step %llu\n", (unsigned long long)report.latest_durable), fflush(stdout);
  }
  check_call(tk_dckpt_close(ck), "tk_dckpt_close");
  if (stats) {
    /* Means per commit on each rank, then the largest over the ranks. */
    double mine[4] = {0, 0, 0, mean_lag}, worst[4];
    if (commits) mine[0] = sum_stall / commits, mine[1] = sum_write / commits, mine[2] = sum_commit / commits;
    MPI_Reduce(mine, worst, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
      printf("checkpoint stats: %d commits; per commit, worst rank: stall %.3f ms, background write %.3f ms, "
             "commit %.3f ms\n", commits, worst[0] * 1e3, worst[1] * 1e3, worst[2] * 1e3);
      if (local) printf("durability lag per step, worst rank: %.3f ms\n", worst[3] * 1e3);
    }
  }
  if (g_rank == 0) {
    if (stop) printf("saved step %llu on signal\n", (unsigned long long)last_saved);
    else printf("done step %llu\n", (unsigned long long)step);
    fflush(stdout);
  }
  free(s.w);
  free(s.v);
  MPI_Finalize();
  return 0;
}
