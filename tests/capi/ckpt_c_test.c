/* Exercise every function of tk_ckpt.h from C99, success and error paths alike.
 * Scratch space: a fresh directory under $TK_TMP (or the working directory), removed at
 * the end. Prints one line per failed check and exits 1 when any failed. */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tk_ckpt.h"
#include "tk_ckpt_dist.h"

static int failures = 0;

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, tk_ckpt_last_error());                                           \
      ++failures;                                                                     \
    }                                                                                 \
  } while (0)

#define CHECK_RC(call, expected) check_rc((call), (expected), #call, __LINE__)

static void check_rc(int rc, int expected, const char* call, int line) {
  if (rc != expected) {
    fprintf(stderr, "%s:%d: %s returned %d, expected %d (last error: %s)\n", __FILE__, line, call,
            rc, expected, tk_ckpt_last_error());
    ++failures;
  } else if (expected > 0 && tk_ckpt_last_error()[0] == '\0') {
    fprintf(stderr, "%s:%d: %s failed without a message\n", __FILE__, line, call);
    ++failures;
  }
}

static char root[4096];

static void path_in(char* out, const char* name) {
  if (snprintf(out, 4096, "%s/%s", root, name) >= 4096) abort();
}

static int remove_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* The model: an f32 matrix, a bf16 vector (raw bits), an i64 scalar counter and an
 * empty f32 tensor. */
static float weights[2][3];
static uint16_t bias[4];
static int64_t counter;
static const int64_t weights_shape[2] = {2, 3};
static const int64_t bias_shape[1] = {4};
static const int64_t empty_shape[2] = {0, 5};

static void fill_model(int seed) {
  int i, j;
  for (i = 0; i < 2; ++i)
    for (j = 0; j < 3; ++j) weights[i][j] = (float)(seed * 10 + i * 3 + j) * 0.5f;
  for (i = 0; i < 4; ++i) bias[i] = (uint16_t)(0x3f80 + seed * 4 + i); /* bf16 near 1.0 */
  counter = 1000 + seed;
}

static void describe_model(tk_ckpt_tensor t[4]) {
  t[0].name = "layer.weight", t[0].dtype = "F32", t[0].ndim = 2, t[0].shape = weights_shape;
  t[0].data = weights, t[0].nbytes = sizeof weights;
  t[1].name = "layer.bias", t[1].dtype = "BF16", t[1].ndim = 1, t[1].shape = bias_shape;
  t[1].data = bias, t[1].nbytes = sizeof bias;
  t[2].name = "step_counter", t[2].dtype = "I64", t[2].ndim = 0, t[2].shape = NULL;
  t[2].data = &counter, t[2].nbytes = sizeof counter;
  t[3].name = "empty", t[3].dtype = "F32", t[3].ndim = 2, t[3].shape = empty_shape;
  t[3].data = NULL, t[3].nbytes = 0;
}

/* Restore `step` into fresh buffers and compare with the model as fill_model(seed) makes it. */
static void check_restored(tk_ckpt* ck, uint64_t step, int seed) {
  float w[2][3];
  uint16_t b[4];
  int64_t c = 0;
  tk_ckpt_tensor t[4];
  describe_model(t);
  t[0].data = w, t[1].data = b, t[2].data = &c;
  memset(w, 0xff, sizeof w);
  memset(b, 0xff, sizeof b);
  CHECK_RC(tk_ckpt_restore_into(ck, step, t, 4), TK_CKPT_OK);
  fill_model(seed);
  CHECK(memcmp(w, weights, sizeof w) == 0);
  CHECK(memcmp(b, bias, sizeof b) == 0);
  CHECK(c == counter);
}

static void test_open_errors(void) {
  tk_ckpt* ck = NULL;
  char path[4096];
  FILE* f;
  CHECK_RC(tk_ckpt_open(root, NULL, NULL), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_open(NULL, NULL, &ck), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_open("", NULL, &ck), TK_CKPT_ERR_USAGE);
  /* A regular file where the directory should be. */
  path_in(path, "plain-file");
  f = fopen(path, "w");
  fputs("not a checkpoint\n", f);
  fclose(f);
  CHECK(tk_ckpt_open(path, NULL, &ck) > 0);
  CHECK(ck == NULL);
  /* A directory below a regular file cannot be created. */
  path_in(path, "plain-file/sub");
  CHECK_RC(tk_ckpt_open(path, NULL, &ck), TK_CKPT_ERR_IO);
  /* A non-empty directory without a checkpoint layout. */
  path_in(path, "foreign");
  mkdir(path, 0755);
  path_in(path, "foreign/notes.txt");
  f = fopen(path, "w");
  fputs("hello\n", f);
  fclose(f);
  path_in(path, "foreign");
  CHECK_RC(tk_ckpt_open(path, NULL, &ck), TK_CKPT_ERR_INVALID_INPUT);
  CHECK(ck == NULL);
  {
    tk_ckpt_options o;
    tk_ckpt_options_init(&o);
    o.compression = 7;
    path_in(path, "bad-options");
    CHECK_RC(tk_ckpt_open(path, &o, &ck), TK_CKPT_ERR_USAGE);
  }
}

static void test_null_arguments(void) {
  uint64_t u = 0;
  size_t n = 0;
  tk_ckpt_save_stats stats;
  tk_ckpt_step* step = NULL;
  tk_ckpt_step_summary summary;
  tk_ckpt_tensor t;
  const char* value = NULL;
  tk_ckpt_gc_report gc;
  tk_ckpt_flush_report flush;
  CHECK_RC(tk_ckpt_close(NULL), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_save_async(NULL, 1, NULL, 0, NULL, NULL, 0, 0, &u), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_wait(NULL, 1, &stats), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_save(NULL, 1, NULL, 0, NULL, NULL, 0, NULL), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_wait_all(NULL), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_latest(NULL, &u), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_list(NULL, NULL, 0, &n), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_step_open(NULL, 1, &step), TK_CKPT_ERR_USAGE);
  tk_ckpt_step_close(NULL);
  CHECK_RC(tk_ckpt_step_info(NULL, &summary), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_step_tensor(NULL, 0, &t), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_step_metadata(NULL, "k", &value), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_restore_into(NULL, 1, NULL, 0), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_verify(NULL, 1, &u, NULL, 0), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_gc(NULL, &gc), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_flush_status(NULL, &flush), TK_CKPT_ERR_USAGE);
  CHECK(strstr(tk_ckpt_last_error(), "NULL") != NULL);
}

/* Saving: sync, async copy, async borrow, and what a save refuses. */
static void test_saves(tk_ckpt* ck) {
  static const char* keys[2] = {"epoch", "note"};
  static const char* values[2] = {"0", "first"};
  static const char* dup_keys[2] = {"a", "a"};
  tk_ckpt_tensor t[4], bad[4];
  tk_ckpt_save_stats stats;
  uint64_t handle = 0;

  fill_model(1);
  describe_model(t);
  memset(&stats, 0, sizeof stats);
  CHECK_RC(tk_ckpt_save(ck, 1, t, 4, keys, values, 2, &stats), TK_CKPT_OK);
  CHECK(stats.step == 1);
  CHECK(stats.logical_bytes == sizeof weights + sizeof bias + sizeof counter);
  CHECK(stats.written_bytes > stats.logical_bytes);

  /* Copy mode: the caller may change its tensors as soon as save_async returns. */
  fill_model(2);
  CHECK_RC(tk_ckpt_save_async(ck, 2, t, 4, NULL, NULL, 0, 0, &handle), TK_CKPT_OK);
  fill_model(99);
  memset(&stats, 0, sizeof stats);
  CHECK_RC(tk_ckpt_wait(ck, handle, &stats), TK_CKPT_OK);
  CHECK(stats.step == 2);
  CHECK(stats.stall_seconds >= 0 && stats.write_seconds >= 0 && stats.commit_seconds >= 0);
  CHECK(stats.tensors_stored == 4);

  /* Borrow mode: untouched until wait returns. */
  fill_model(3);
  CHECK_RC(tk_ckpt_save_async(ck, 3, t, 4, keys, values, 1, TK_CKPT_BORROW, &handle), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_wait(ck, handle, NULL), TK_CKPT_OK);
  CHECK(tk_ckpt_wait(ck, handle + 1000, NULL) > 0);

  /* Refused saves. */
  CHECK_RC(tk_ckpt_save_async(ck, 3, t, 4, NULL, NULL, 0, 0, &handle), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_save_async(ck, 4, t, 4, NULL, NULL, 0, 4, &handle), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_save_async(ck, 4, t, 4, dup_keys, values, 2, 0, &handle), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_save_async(ck, 4, t, 4, NULL, NULL, 0, 0, NULL), TK_CKPT_ERR_USAGE);
  memcpy(bad, t, sizeof bad);
  bad[1].name = bad[0].name;
  CHECK_RC(tk_ckpt_save(ck, 4, bad, 4, NULL, NULL, 0, NULL), TK_CKPT_ERR_USAGE);
  memcpy(bad, t, sizeof bad);
  bad[1].name = "";
  CHECK_RC(tk_ckpt_save(ck, 4, bad, 4, NULL, NULL, 0, NULL), TK_CKPT_ERR_USAGE);
  memcpy(bad, t, sizeof bad);
  bad[0].dtype = "float32";
  CHECK_RC(tk_ckpt_save(ck, 4, bad, 4, NULL, NULL, 0, NULL), TK_CKPT_ERR_USAGE);
  CHECK(strstr(tk_ckpt_last_error(), "float32") != NULL);
  memcpy(bad, t, sizeof bad);
  bad[0].nbytes = 20;
  CHECK_RC(tk_ckpt_save(ck, 4, bad, 4, NULL, NULL, 0, NULL), TK_CKPT_ERR_USAGE);
  CHECK(strstr(tk_ckpt_last_error(), "layer.weight") != NULL);
  CHECK_RC(tk_ckpt_wait_all(ck), TK_CKPT_OK);
}

static void test_steps(tk_ckpt* ck) {
  uint64_t steps[8], latest = 0;
  size_t count = 0, i;
  tk_ckpt_step* step = NULL;
  tk_ckpt_step_summary summary;
  tk_ckpt_tensor t[4];
  const char* value = NULL;
  float w[6];
  uint16_t b[4];
  int64_t c;
  void* buffers[4];

  CHECK_RC(tk_ckpt_latest(ck, &latest), TK_CKPT_OK);
  CHECK(latest == 3);
  CHECK_RC(tk_ckpt_list(ck, NULL, 0, &count), TK_CKPT_OK);
  CHECK(count == 3);
  CHECK_RC(tk_ckpt_list(ck, steps, 2, &count), TK_CKPT_OK);
  CHECK(count == 3 && steps[0] == 1 && steps[1] == 2);
  CHECK_RC(tk_ckpt_list(ck, steps, 8, &count), TK_CKPT_OK);
  CHECK(count == 3 && steps[2] == 3);

  CHECK_RC(tk_ckpt_step_open(ck, 99, &step), TK_CKPT_ERR_INVALID_INPUT);
  CHECK_RC(tk_ckpt_step_open(ck, 3, &step), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_step_info(step, &summary), TK_CKPT_OK);
  CHECK(summary.step == 3 && summary.tensors == 4 && !summary.has_parent);
  CHECK(summary.logical_bytes == sizeof weights + sizeof bias + sizeof counter);
  CHECK(summary.stored_bytes > 0 && summary.created != NULL && summary.created[0] != '\0');
  CHECK_RC(tk_ckpt_step_metadata(step, "epoch", &value), TK_CKPT_OK);
  CHECK(value != NULL && strcmp(value, "0") == 0);
  CHECK_RC(tk_ckpt_step_metadata(step, "note", &value), TK_CKPT_NONE);
  CHECK_RC(tk_ckpt_step_tensor(step, 4, &t[0]), TK_CKPT_ERR_USAGE);

  /* Allocate from the step's description, then restore into it. */
  buffers[0] = w, buffers[1] = b, buffers[2] = &c, buffers[3] = NULL;
  for (i = 0; i < 4; ++i) {
    CHECK_RC(tk_ckpt_step_tensor(step, i, &t[i]), TK_CKPT_OK);
    CHECK(t[i].data == NULL);
  }
  for (i = 0; i < 4; ++i) {
    if (strcmp(t[i].name, "layer.weight") == 0) {
      CHECK(strcmp(t[i].dtype, "F32") == 0 && t[i].ndim == 2 && t[i].shape[0] == 2 && t[i].shape[1] == 3);
      CHECK(t[i].nbytes == sizeof w);
      t[i].data = buffers[0];
    } else if (strcmp(t[i].name, "layer.bias") == 0) {
      CHECK(strcmp(t[i].dtype, "BF16") == 0 && t[i].ndim == 1 && t[i].shape[0] == 4);
      t[i].data = buffers[1];
    } else if (strcmp(t[i].name, "step_counter") == 0) {
      CHECK(strcmp(t[i].dtype, "I64") == 0 && t[i].ndim == 0 && t[i].nbytes == 8);
      t[i].data = buffers[2];
    } else {
      CHECK(strcmp(t[i].name, "empty") == 0 && t[i].nbytes == 0 && t[i].shape[0] == 0);
    }
  }
  CHECK_RC(tk_ckpt_restore_into(ck, 3, t, 4), TK_CKPT_OK);
  tk_ckpt_step_close(step);
  fill_model(3);
  CHECK(memcmp(w, weights, sizeof w) == 0 && memcmp(b, bias, sizeof b) == 0 && c == counter);

  /* Copy mode saved the values at save time, not the ones written afterwards. */
  check_restored(ck, 1, 1);
  check_restored(ck, 2, 2);
}

static void test_restore_errors(tk_ckpt* ck) {
  static const int64_t wrong_shape[2] = {3, 2};
  float w[6];
  double d[6];
  tk_ckpt_tensor t;
  memset(&t, 0, sizeof t);
  t.name = "layer.weight", t.dtype = "F32", t.ndim = 2, t.shape = weights_shape;
  t.data = w, t.nbytes = sizeof w;
  CHECK_RC(tk_ckpt_restore_into(ck, 3, &t, 1), TK_CKPT_OK);
  /* Wrong step, wrong shape, wrong dtype, a name the step lacks. */
  CHECK_RC(tk_ckpt_restore_into(ck, 99, &t, 1), TK_CKPT_ERR_INVALID_INPUT);
  t.shape = wrong_shape;
  CHECK_RC(tk_ckpt_restore_into(ck, 3, &t, 1), TK_CKPT_ERR_USAGE);
  CHECK(strstr(tk_ckpt_last_error(), "layer.weight") != NULL);
  t.shape = weights_shape, t.dtype = "F64", t.data = d, t.nbytes = sizeof d;
  CHECK_RC(tk_ckpt_restore_into(ck, 3, &t, 1), TK_CKPT_ERR_USAGE);
  CHECK(strstr(tk_ckpt_last_error(), "layer.weight") != NULL);
  t.name = "no.such.tensor", t.dtype = "F32", t.data = w, t.nbytes = sizeof w;
  CHECK_RC(tk_ckpt_restore_into(ck, 3, &t, 1), TK_CKPT_ERR_INVALID_INPUT);
  CHECK(strstr(tk_ckpt_last_error(), "no.such.tensor") != NULL);
  /* Descriptors inconsistent in themselves. */
  t.name = "layer.weight", t.dtype = "F64", t.nbytes = sizeof w;
  CHECK_RC(tk_ckpt_restore_into(ck, 3, &t, 1), TK_CKPT_ERR_USAGE);
  t.dtype = "F32", t.data = NULL;
  CHECK_RC(tk_ckpt_restore_into(ck, 3, &t, 1), TK_CKPT_ERR_USAGE);
  t.data = w, t.ndim = -1;
  CHECK_RC(tk_ckpt_restore_into(ck, 3, &t, 1), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_ckpt_restore_into(ck, 3, NULL, 1), TK_CKPT_ERR_USAGE);
}

/* Flip one bit in the data of step `step`'s first shard. */
static int corrupt_step(uint64_t step) {
  char dir[4096], path[4096 + 256];
  DIR* d;
  struct dirent* e;
  FILE* f;
  long size;
  int byte;
  snprintf(path, sizeof path, "ck/step-%llu", (unsigned long long)step);
  path_in(dir, path);
  d = opendir(dir);
  if (d == NULL) return 0;
  path[0] = '\0';
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 12 && strcmp(e->d_name + n - 12, ".safetensors") == 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      break;
    }
  }
  closedir(d);
  if (path[0] == '\0' || (f = fopen(path, "r+b")) == NULL) return 0;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, size - 1, SEEK_SET); /* the last data byte belongs to some tensor */
  byte = fgetc(f);
  fseek(f, size - 1, SEEK_SET);
  fputc(byte ^ 0x10, f);
  fclose(f);
  return 1;
}

static void test_verify(tk_ckpt* ck) {
  uint64_t problems = 7;
  char text[256];
  char tiny[8];
  CHECK_RC(tk_ckpt_verify(ck, 3, &problems, text, sizeof text), TK_CKPT_OK);
  CHECK(problems == 0 && text[0] == '\0');
  CHECK_RC(tk_ckpt_verify(ck, 99, &problems, text, sizeof text), TK_CKPT_ERR_INVALID_INPUT);
  CHECK(strstr(tk_ckpt_last_error(), "99") != NULL);
  CHECK(corrupt_step(1));
  CHECK_RC(tk_ckpt_verify(ck, 1, &problems, text, sizeof text), TK_CKPT_ERR_INVALID_INPUT);
  CHECK(problems >= 1);
  CHECK(strstr(text, "layer.weight") || strstr(text, "layer.bias") || strstr(text, "step_counter"));
  CHECK(strncmp(tk_ckpt_last_error(), text, strlen(text)) == 0);
  CHECK_RC(tk_ckpt_verify(ck, 1, NULL, tiny, sizeof tiny), TK_CKPT_ERR_INVALID_INPUT);
  CHECK(strlen(tiny) == sizeof tiny - 1);
  CHECK_RC(tk_ckpt_verify(ck, 1, NULL, NULL, 0), TK_CKPT_ERR_INVALID_INPUT);
}

/* A second tier, retention and gc. */
static void test_tiers_and_gc(void) {
  char dir[4096], durable[4096], leftover[4096];
  tk_ckpt_options o;
  tk_ckpt* ck = NULL;
  tk_ckpt_tensor t[4];
  tk_ckpt_flush_report flush;
  tk_ckpt_gc_report gc;
  uint64_t s;
  size_t count = 0;

  path_in(dir, "tiered");
  path_in(durable, "tiered-durable");
  tk_ckpt_options_init(&o);
  o.durable_dir = durable;
  o.compression = TK_CKPT_COMPRESSION_LOSSLESS;
  CHECK_RC(tk_ckpt_open(dir, &o, &ck), TK_CKPT_OK);
  describe_model(t);
  for (s = 1; s <= 3; ++s) {
    fill_model((int)s);
    CHECK_RC(tk_ckpt_save(ck, s * 10, t, 4, NULL, NULL, 0, NULL), TK_CKPT_OK);
  }
  CHECK_RC(tk_ckpt_wait_all(ck), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_flush_status(ck, &flush), TK_CKPT_OK);
  CHECK(flush.has_latest_committed && flush.latest_committed == 30);
  CHECK(flush.has_latest_durable && flush.latest_durable == 30);
  CHECK(flush.pending == 0 && flush.lag_seconds == 0);
  check_restored(ck, 20, 2);
  CHECK_RC(tk_ckpt_close(ck), TK_CKPT_OK);

  /* The durable tier is an ordinary checkpoint directory. */
  o.durable_dir = NULL;
  o.read_only = 1;
  CHECK_RC(tk_ckpt_open(durable, &o, &ck), TK_CKPT_OK);
  check_restored(ck, 30, 3);
  CHECK_RC(tk_ckpt_close(ck), TK_CKPT_OK);

  /* Reopened with stricter retention, gc removes the old steps and a killed writer's
   * leftover temp directory. */
  path_in(leftover, "tiered/step-40.tmp-killed");
  CHECK(mkdir(leftover, 0755) == 0);
  tk_ckpt_options_init(&o);
  o.keep_last = 1;
  CHECK_RC(tk_ckpt_open(dir, &o, &ck), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_gc(ck, &gc), TK_CKPT_OK);
  CHECK(gc.removed_steps == 2 && gc.bytes_freed > 0);
  CHECK_RC(tk_ckpt_list(ck, NULL, 0, &count), TK_CKPT_OK);
  CHECK(count == 1);
  CHECK(access(leftover, F_OK) != 0);
  CHECK_RC(tk_ckpt_close(ck), TK_CKPT_OK);
}

/* The distributed API in a program that is not an MPI job: refused cleanly (not
 * compiled in, or MPI not initialised), never a crash. */
static void test_dist_without_mpi(void) {
  tk_dckpt_options o;
  tk_dckpt* h = NULL;
  uint64_t step = 0;
  int rc;
  tk_dckpt_options_init(&o);
  CHECK(o.timeout_seconds == 300 && o.threads == 2);
  rc = tk_dckpt_open(root, 0, &o, &h);
  CHECK(rc == TK_CKPT_ERR_USAGE || rc == TK_CKPT_ERR_UNAVAILABLE);
  CHECK(strstr(tk_ckpt_last_error(), rc == TK_CKPT_ERR_USAGE ? "MPI is not initialised" : "not compiled in") != NULL);
  CHECK(h == NULL);
  CHECK_RC(tk_dckpt_latest(NULL, &step), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_dckpt_wait(NULL, NULL), TK_CKPT_ERR_USAGE);
  CHECK_RC(tk_dckpt_close(NULL), TK_CKPT_OK);
}

int main(void) {
  const char* base = getenv("TK_TMP");
  char dir[4096];
  tk_ckpt* ck = NULL;
  tk_ckpt* second = NULL;
  tk_ckpt* reader = NULL;
  tk_ckpt_options o;
  uint64_t latest = 0, handle = 0;
  size_t count = 5;
  char pid[32];
  tk_ckpt_tensor t[4];

  if (base == NULL || base[0] == '\0') base = ".";
  if (mkdir(base, 0755) != 0 && errno != EEXIST) {
    perror(base);
    return 1;
  }
  snprintf(root, sizeof root, "%s/ckpt_c_test_XXXXXX", base);
  if (mkdtemp(root) == NULL) {
    perror(root);
    return 1;
  }

  CHECK(tk_ckpt_version() == TK_CKPT_VERSION);
  CHECK(tk_ckpt_last_error()[0] == '\0');
  tk_ckpt_options_init(&o);
  CHECK(o.read_only == 0 && o.durable_dir == NULL && o.keep_last == 0 && o.keep_every == 0);
  CHECK(o.compression == TK_CKPT_COMPRESSION_NONE && o.incremental == 0 && o.full_every == 10);
  CHECK(o.delta_max_ratio == 0.5 && o.staging_limit == 0 && o.shard_bytes == 0 && o.threads == 2);

  test_open_errors();
  test_null_arguments();
  test_dist_without_mpi();

  path_in(dir, "ck");
  CHECK_RC(tk_ckpt_open(dir, &o, &ck), TK_CKPT_OK);
  /* One writer per directory, even within one process; its pid is named. */
  CHECK_RC(tk_ckpt_open(dir, &o, &second), TK_CKPT_ERR_USAGE);
  CHECK(second == NULL);
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  CHECK(strstr(tk_ckpt_last_error(), pid) != NULL);
  /* Readers are welcome and cannot save. */
  o.read_only = 1;
  CHECK_RC(tk_ckpt_open(dir, &o, &reader), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_latest(reader, &latest), TK_CKPT_NONE);
  CHECK_RC(tk_ckpt_list(reader, NULL, 0, &count), TK_CKPT_OK);
  CHECK(count == 0);
  fill_model(0);
  describe_model(t);
  CHECK_RC(tk_ckpt_save_async(reader, 1, t, 4, NULL, NULL, 0, 0, &handle), TK_CKPT_ERR_USAGE);

  test_saves(ck);
  CHECK_RC(tk_ckpt_latest(reader, &latest), TK_CKPT_OK);
  CHECK(latest == 3);
  test_steps(ck);
  test_restore_errors(reader);
  test_verify(reader);
  CHECK_RC(tk_ckpt_close(reader), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_close(ck), TK_CKPT_OK);

  /* The lock is released on close. */
  o.read_only = 0;
  CHECK_RC(tk_ckpt_open(dir, &o, &second), TK_CKPT_OK);
  CHECK_RC(tk_ckpt_close(second), TK_CKPT_OK);

  test_tiers_and_gc();

  if (failures == 0) nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  fprintf(stderr, "%s: %d failed checks\n", failures ? "FAIL" : "ok", failures);
  return failures ? 1 : 0;
}
