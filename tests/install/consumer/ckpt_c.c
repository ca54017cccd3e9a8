/* Saves a tensor with libtkckpt, restores it from the newest step and compares the bytes.
 * Usage: ckpt_c DIR. Prints one line; exit code 0 when the round trip is exact. */
#include <stdio.h>
#include <string.h>

#include "tk_ckpt.h"
#include "tk_ckpt_dist.h"

static int fail(const char* what) {
  fprintf(stderr, "ckpt_c: %s: %s\n", what, tk_ckpt_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ckpt_c DIR\n");
    return 2;
  }
  if (tk_ckpt_version() != TK_CKPT_VERSION) {
    fprintf(stderr, "ckpt_c: header %d, library %d\n", TK_CKPT_VERSION, tk_ckpt_version());
    return 1;
  }
  float weights[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
  int64_t shape[2] = {2, 3};
  tk_ckpt_tensor tensor = {"w", "F32", 2, shape, weights, sizeof weights};
  tk_ckpt* ckpt = NULL;
  if (tk_ckpt_open(argv[1], NULL, &ckpt) != TK_CKPT_OK) return fail("open");
  if (tk_ckpt_save(ckpt, 7, &tensor, 1, NULL, NULL, 0, NULL) != TK_CKPT_OK) return fail("save");
  uint64_t latest = 0;
  if (tk_ckpt_latest(ckpt, &latest) != TK_CKPT_OK) return fail("latest");
  float restored[6] = {0};
  tk_ckpt_tensor target = tensor;
  target.data = restored;
  if (tk_ckpt_restore_into(ckpt, latest, &target, 1) != TK_CKPT_OK) return fail("restore");
  if (tk_ckpt_close(ckpt) != TK_CKPT_OK) return fail("close");
  if (memcmp(weights, restored, sizeof weights) != 0) {
    fprintf(stderr, "ckpt_c: restored bytes differ\n");
    return 1;
  }
  printf("tkckpt %d: step %llu restored\n", tk_ckpt_version(), (unsigned long long)latest);
  return 0;
}
