// Raw file-system bandwidth, the limit that checkpoint and conversion speeds are judged
// against: a sequential write made durable with fsync (what `dd conv=fsync` does) and a
// sequential read of a file whose pages were dropped from the cache beforehand.
#pragma once

#include <cstdint>
#include <string>

namespace tk::bench {

// Ask the kernel to drop the cached pages of `path` (fdatasync, then posix_fadvise
// DONTNEED), so that the next read goes to the device. Returns false when the advice
// was refused (the read may then be served from memory). Throws kIo when `path`
// cannot be opened.
bool drop_file_cache(const std::string& path);

// Write `bytes` from `data` to `path` (created or truncated) in large sequential
// pieces, then fsync. Throws kIo naming the path on any failure.
void write_file_synced(const std::string& path, const uint8_t* data, uint64_t bytes);

// Read the whole of `path` sequentially into `buffer` (`capacity` bytes: successive
// pieces land at successive offsets, wrapping around when the file is larger).
// Returns the bytes read. Throws kIo.
uint64_t read_file_through(const std::string& path, uint8_t* buffer, uint64_t capacity);

}  // namespace tk::bench
