// Temporary files for data that has nowhere else to go: a pipe that a reader must see as
// a file (HDF5, tools that read tensors twice), an HDF5 file bound for stdout, quantized
// parts set aside until the writer wants them. Created in $TMPDIR (or /tmp); the name is
// removed as soon as whoever needs it has opened the file, so nothing is left behind
// whatever happens, and fd() keeps the data until destruction.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace tk::io {

class InputStream;

class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();
  // Create the file, its name starting with `prefix` ("tk-hdf5"); false when no
  // temporary file can be created.
  bool create(const std::string& prefix);
  int fd() const { return fd_; }
  // The name, until remove_name().
  const std::string& path() const { return path_; }
  void remove_name();
  // The directory temporary files go to, for messages.
  static std::string directory();

  // Write `bytes` at `offset` / read exactly `out.size()` bytes from `offset`. Throw
  // kIo ("what: reason") naming `where`.
  void write_at(uint64_t offset, std::span<const uint8_t> bytes, const char* what, const std::string& where) const;
  void read_at(uint64_t offset, std::span<uint8_t> out, const char* what, const std::string& where) const;

 private:
  std::string path_;
  int fd_ = -1;
};

// Copy the rest of `in` into `file` from its start; returns the bytes copied. Throws kIo
// ("cannot buffer the stream in a temporary file") naming the stream.
uint64_t copy_to_temp(InputStream& in, const TempFile& file);

}  // namespace tk::io
