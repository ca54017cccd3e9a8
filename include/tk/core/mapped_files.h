// Memory-mapped inputs that shrink while they are read.
//
// Reading a page of a mapping past the end of a file that was truncated after it was
// mapped raises SIGBUS, which kills the process. A trainer rewriting model.safetensors
// in place is enough. Every mapping Buffer::map_fd makes is registered here; a SIGBUS
// inside a registered mapping maps zero pages over the rest of it and marks the file as
// shrunk, so that the reading thread goes on (reading zeros) instead of dying. Whatever
// was computed from those zeros must not be published: the writers of outputs call
// check_mapped_files() before they publish, and the tools before they exit with success.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tk {

// Register [begin, begin + bytes), a read-only mapping of `path` (the file `device`,
// `inode`), and install the SIGBUS handler on first use. Return the registration's slot,
// or -1 when every slot is taken (the caller then reads the file instead of mapping it).
int mapped_files_register(const void* begin, size_t bytes, const std::string& path, uint64_t device,
                          uint64_t inode);

// Release a slot before its mapping is unmapped. A file that shrank while it was mapped
// is remembered until check_mapped_files() reports it.
void mapped_files_release(int slot);

// Throw an I/O error (kIo) naming a file that shrank while it was mapped, if any did
// since the last report (each shrunk file that is no longer mapped is reported once).
// `after_failure`: something already failed, perhaps because the kernel met a lost page
// on our behalf (write(2) from it fails with EFAULT, and no SIGBUS is raised): then also
// compare each mapped file's size now with its mapping's.
void check_mapped_files(bool after_failure = false);

}  // namespace tk
