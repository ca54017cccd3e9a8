// Dropping the pages of a tensor read from a private, read-only file mapping, so that a
// run over a model holds only the tensors in hand (TensorReader::release).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "tk/core/buffer.h"

namespace tk::io {

// A page fault maps the fault's neighbours too (fault-around, and the page cache's large
// folios, up to 2 MiB): reading the head of a tensor maps back the tail of the one before
// it, already released, and over hundreds of tensors those tails added up (13 MiB resident
// for a 1 GiB model; 4.7 MiB when reaching back 64 KiB). Each release reaches back this
// far to drop them again.
inline constexpr uint64_t kFaultAroundBytes = uint64_t{2} << 20;

// Drop the pages of bytes [at, at + n) of the mapping `file`, and of the
// kFaultAroundBytes before them; a later access faults them in again from the file.
inline void release_mapped_bytes(const Buffer& file, uint64_t at, uint64_t n) {
  if (n == 0 || at >= file.size()) return;
  static const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(file.data());
  const uint64_t from = at > kFaultAroundBytes ? at - kFaultAroundBytes : 0;
  const uint64_t first = (base + from) / page * page;
  const uint64_t end = base + std::min<uint64_t>(file.size(), at + n);
  const uint64_t last = (end + page - 1) / page * page;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace tk::io
