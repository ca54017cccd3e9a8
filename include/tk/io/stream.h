// Byte streams: files, the standard streams and memory, read through a buffer that can
// be peeked (so formats are detected on pipes); outputs written to a temporary name
// beside the target and renamed only on success. A path is always a file's path: the
// standard streams have their own entry points (what a command line spells them as is
// the tools' business, src/cli).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tk/core/buffer.h"

namespace tk::io {

class DirFd;

// A buffered sequential reader over a file descriptor or a memory buffer.
struct InputOptions {
  // The caller named this path (a user's argument): a FIFO or socket behind it (a named
  // pipe, process substitution's /dev/fd/N) is read as a stream, its open blocking until
  // a writer comes. False for files found on the caller's behalf (the shards an index
  // names): those must be regular files, and are opened without blocking so that a
  // planted FIFO is refused, never waited on.
  bool pipes = true;
};

class InputStream {
 public:
  // Open the file at `path` for reading. Symbolic links are followed; what they lead
  // to must be a regular file, or a pipe when options.pipes (a device is refused:
  // kInvalidInput "not a regular file"). Throws kIo when it cannot be opened and kUsage
  // when it is a directory.
  static std::unique_ptr<InputStream> open(const std::string& path, const InputOptions& options = {});
  // Read the process's standard input, named "<stdin>". Never a regular file for
  // is_regular_file(), even when redirected from one: it is not reopened by path.
  static std::unique_ptr<InputStream> standard_input();
  // Read from memory (kept alive by the Buffer). `name` is used in messages.
  static std::unique_ptr<InputStream> from_buffer(Buffer data, std::string name);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // "model.safetensors", "<stdin>", or the name given to from_buffer.
  const std::string& name() const { return name_; }
  // The path given to open(); empty for standard input and memory streams.
  const std::string& path() const { return path_; }
  bool is_standard_input() const { return standard_input_; }
  // True for a stream made by from_buffer(): no descriptor, nothing to spool.
  bool is_memory() const { return memory_stream_; }
  // True for a regular file opened by path: it can be memory-mapped or reopened.
  bool is_regular_file() const { return regular_file_; }
  // Size in bytes when known (regular files and memory), else nullopt (pipes).
  std::optional<uint64_t> size() const { return size_; }
  // Bytes consumed so far.
  uint64_t position() const { return position_; }

  // Return up to `n` upcoming bytes without consuming them (fewer only at end of stream).
  // The span stays valid until the next call on this stream.
  std::span<const uint8_t> peek(size_t n);
  // Read up to `n` bytes; returns fewer only at end of stream. Throws kIo on read errors.
  size_t read(void* dst, size_t n);
  // Read exactly `n` bytes; throws kInvalidInput "truncated <what>" at end of stream.
  void read_exact(void* dst, size_t n, const char* what);
  // Discard `n` bytes; throws kInvalidInput "truncated <what>" at end of stream.
  void skip(uint64_t n, const char* what);
  // Read everything that is left.
  Buffer read_all();
  // Serve the rest of a regular file opened by path from a read-only memory map: later
  // reads copy from it and read_view() hands out slices of it without a copy. Returns
  // false, changing nothing, for other streams (memory streams are served so already).
  bool map();
  // The next `n` bytes: a slice of the mapping or memory, else read into a buffer from
  // `pool` (or a new one). Throws kInvalidInput "truncated <what>" at end of stream.
  Buffer read_view(size_t n, const char* what, BufferPool* pool = nullptr);

 private:
  InputStream() = default;
  size_t fill(size_t want);  // make at least `want` bytes available if possible
  void describe_fd();        // size and kind from fstat; kUsage for a directory

  std::string name_, path_;
  int fd_ = -1;
  bool owns_fd_ = false;
  bool standard_input_ = false;
  bool memory_stream_ = false;
  bool regular_file_ = false;
  bool eof_ = false;
  std::optional<uint64_t> size_;
  uint64_t position_ = 0;
  Buffer memory_;             // backing for memory streams
  std::vector<uint8_t> buf_;  // read buffer for fd streams
  size_t buf_begin_ = 0, buf_end_ = 0;
};

// The whole of a small file (a config, an index): kInvalidInput `too_large` (naming the
// file) when it holds more than `max_bytes`, checked before reading and again after, in
// case the file grows meanwhile.
Buffer read_small_file(const std::string& path, uint64_t max_bytes, const std::string& too_large);
// The same for a stream opened already (standard input, say), naming it.
Buffer read_small_file(InputStream& in, uint64_t max_bytes, const std::string& too_large);

struct OutputOptions {
  bool durable = false;  // fsync the file (and its directory) before and after the rename
  // The caller named this path (a user's -o): a character device or FIFO at it, named
  // directly (/dev/null, a named pipe), or one of the process's own descriptor names
  // (/dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N, as process substitution
  // gives), is written as a stream. False for names derived on the caller's behalf
  // (shards, a shard index): those must be absent or regular files.
  bool special_files = true;
};

// How an output path will be written. The directory part is the caller's and followed;
// the final component is not: a symbolic link is never written through, except the
// descriptor names above.
enum class OutputTarget {
  kAbsent,       // a new file, through a temporary name and a rename
  kRegularFile,  // an existing regular file, replaced as a name by the same rename
  kStream,       // written directly (options.special_files only)
};

// Classify `path` for writing with `options`, before any work is done. Throws kUsage
// naming the path for what cannot be an output: a directory, a block device, a socket,
// a symbolic link (other than a descriptor name); and with special_files false,
// anything but an absent name or a regular file.
OutputTarget output_target(const std::string& path, const OutputOptions& options = {});

// A buffered writer to a file (through a temporary name beside it), stdout, or memory.
// Nothing appears under the target name until commit(); destroying an uncommitted
// stream removes the temporary file.
class OutputStream {
 public:
  // Open the file at `path` for writing. The temporary file is created, and
  // later renamed, relative to a descriptor of the target's directory (O_EXCL, no link
  // followed). Throws kUsage for a target output_target() refuses, kIo when the
  // temporary file cannot be created.
  static std::unique_ptr<OutputStream> open(const std::string& path, const OutputOptions& options = {});
  // Write to the process's standard output, named "<stdout>", directly (no temporary
  // file); options.durable asks for an fsync at commit where the descriptor takes one.
  static std::unique_ptr<OutputStream> standard_output(const OutputOptions& options = {});
  // Write into `sink` (appended); for tests and in-memory pipelines.
  static std::unique_ptr<OutputStream> to_memory(std::vector<uint8_t>* sink);
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  const std::string& name() const { return name_; }
  bool is_stdout() const { return standard_output_; }
  uint64_t position() const { return position_; }

  // Append bytes. Throws kIo on failure (a full disk, a closed pipe).
  void write(const void* data, size_t n);
  void write(std::span<const uint8_t> bytes) { write(bytes.data(), bytes.size()); }

  // For writers that need a real seekable file (HDF5): the temporary file's path when
  // this stream goes to a file, nullopt for stdout and memory. A writer that uses it
  // writes the file by path and must not call write().
  std::optional<std::string> temp_path() const;

  // Flush and close; for files, rename the temporary file to the target (after fsync
  // when durable). Throws kIo on any failure, including a failed close of stdout.
  void commit();

 private:
  OutputStream() = default;
  void flush_buffer();

  std::string name_, temp_path_, temp_name_, target_name_;
  std::unique_ptr<DirFd> dir_;  // the target's directory, for the temporary file and the rename
  OutputOptions options_;
  int fd_ = -1;
  bool standard_output_ = false;
  bool committed_ = false;
  std::vector<uint8_t>* sink_ = nullptr;
  std::vector<uint8_t> buf_;
  uint64_t position_ = 0;
};

// Paths of temporary output files not yet committed, for a signal handler to remove:
// writes at most `max` NUL-terminated paths' pointers into `out` and returns the count.
// Async-signal-safe.
size_t pending_temp_paths(const char** out, size_t max);

}  // namespace tk::io
