// libtk_truncate_on_map.so, preloaded by the CLI cases that prove a tool survives an
// input that shrinks while it is mapped (tests/cli/*/truncated_while_mapped.sh). Every
// read-only file mapping of a file whose path ends with $TK_TRUNCATE_NAME cuts that file
// to $TK_TRUNCATE_TO bytes right after it is mapped, as a trainer rewriting the file in
// place would between the tool's mmap and its reads: the pages past the new end then
// raise SIGBUS when they are read. Deterministic, unlike racing a truncate(1).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef void* (*mmap_fn)(void*, size_t, int, int, int, off_t);

static void truncate_if_named(int fd) {
  const char* name = getenv("TK_TRUNCATE_NAME");
  const char* to = getenv("TK_TRUNCATE_TO");
  if (!name || !*name || !to) return;
  char link[64];
  char path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return;
  path[n] = '\0';
  size_t len = strlen(name);
  if ((size_t)n < len || strcmp(path + n - len, name) != 0) return;
  off_t keep = (off_t)strtoll(to, NULL, 10);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= keep) return;
  int w = open(path, O_WRONLY | O_CLOEXEC);
  if (w < 0) return;
  if (ftruncate(w, keep) != 0) perror("truncate_on_map");
  close(w);
}

void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  static mmap_fn real;
  if (!real) real = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
  void* p = real(addr, length, prot, flags, fd, offset);
  if (p != MAP_FAILED && fd >= 0 && !(flags & MAP_ANONYMOUS) && !(prot & PROT_WRITE)) truncate_if_named(fd);
  return p;
}

void* mmap64(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, length, prot, flags, fd, offset);
}
