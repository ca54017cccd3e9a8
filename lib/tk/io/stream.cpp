#include "tk/io/stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "tk/core/error.h"
#include "tk/core/mapped_files.h"
#include "tk/io/dir_fd.h"

namespace tk::io {

namespace {

constexpr size_t kReadChunk = 1 << 20;
constexpr size_t kWriteChunk = 1 << 20;

// Registry of uncommitted temporary outputs, readable from a signal handler: fixed
// slots of atomic pointers to strings owned by the OutputStreams.
constexpr size_t kMaxPending = 64;
std::atomic<const char*> g_pending[kMaxPending];

void pending_add(const char* p) {
  for (auto& slot : g_pending) {
    const char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, p)) return;
  }
}

void pending_remove(const char* p) {
  for (auto& slot : g_pending) {
    const char* expected = p;
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

std::string random_suffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t v = (uint64_t{rd()} << 32) ^ rd() ^ (counter.fetch_add(1) << 48) ^ static_cast<uint64_t>(::getpid());
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (int i = 0; i < 8; ++i, v /= 36) s += kDigits[v % 36];
  return s;
}

// Pipes default to 64 KiB, which makes a reader and a writer take turns in small steps;
// ask for 1 MiB (the usual system maximum). Harmless on anything that is not a pipe.
void enlarge_pipe(int fd) {
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) ::fcntl(fd, F_SETPIPE_SZ, 1 << 20);
}

void write_all(int fd, const uint8_t* p, size_t n, const std::string& name) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min(n, kMaxWriteCall));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw errno_error("write failed", name, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

// ---------------------------------------------------------------- InputStream

namespace {

const char* file_type_noun(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a character device";
  return "a special file";
}

bool is_pipe(mode_t mode) { return S_ISFIFO(mode) || S_ISSOCK(mode); }

// Open input `path`. A pipe the caller named is opened blocking (a named pipe's writer
// may come later); everything else without blocking, so that a FIFO put in a regular
// file's place is seen by fstat and refused rather than waited on.
int open_input(const std::string& path, const InputOptions& options) {
  struct stat st;
  const bool named_pipe = options.pipes && ::stat(path.c_str(), &st) == 0 && is_pipe(st.st_mode);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (named_pipe ? 0 : O_NONBLOCK));
  if (fd < 0) throw errno_error("failed to open for reading", path, errno);
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw errno_error("failed to stat", path, err);
  }
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || (named_pipe && is_pipe(st.st_mode))) {
    if (!named_pipe) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
  }
  ::close(fd);
  throw invalid_input(std::string("expected a regular file") + (options.pipes ? " or a pipe" : "") + ", found " +
                          file_type_noun(st.st_mode),
                      path);
}

}  // namespace

std::unique_ptr<InputStream> InputStream::open(const std::string& path, const InputOptions& options) {
  std::unique_ptr<InputStream> s(new InputStream());
  s->path_ = path;
  s->name_ = path;
  s->fd_ = open_input(path, options);
  s->owns_fd_ = true;
  s->describe_fd();
  return s;
}

std::unique_ptr<InputStream> InputStream::standard_input() {
  std::unique_ptr<InputStream> s(new InputStream());
  s->name_ = "<stdin>";
  s->standard_input_ = true;
  s->fd_ = STDIN_FILENO;
  enlarge_pipe(s->fd_);
  s->describe_fd();
  return s;
}

void InputStream::describe_fd() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) throw usage_error("is a directory", name_);
  if (S_ISREG(st.st_mode)) {
    size_ = static_cast<uint64_t>(st.st_size);
    // Standard input redirected from a file has no path to map or reopen it by.
    regular_file_ = !standard_input_;
  }
}

std::unique_ptr<InputStream> InputStream::from_buffer(Buffer data, std::string name) {
  std::unique_ptr<InputStream> s(new InputStream());
  s->name_ = std::move(name);
  s->memory_stream_ = true;
  s->size_ = data.size();
  s->memory_ = std::move(data);
  return s;
}

InputStream::~InputStream() {
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

size_t InputStream::fill(size_t want) {
  if (fd_ < 0) return memory_.size() - position_;
  size_t avail = buf_end_ - buf_begin_;
  if (avail >= want || eof_) return avail;
  if (buf_begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + buf_begin_, avail);
    buf_begin_ = 0;
    buf_end_ = avail;
  }
  if (buf_.size() < std::max(want, kReadChunk)) buf_.resize(std::max(want, kReadChunk));
  while (buf_end_ < want && !eof_) {
    ssize_t r = ::read(fd_, buf_.data() + buf_end_, buf_.size() - buf_end_);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw errno_error("read failed", name_, errno);
    }
    if (r == 0) eof_ = true;
    buf_end_ += static_cast<size_t>(r);
  }
  return buf_end_ - buf_begin_;
}

std::span<const uint8_t> InputStream::peek(size_t n) {
  if (fd_ < 0) {
    size_t avail = memory_.size() - position_;
    return {memory_.data() + position_, std::min(n, avail)};
  }
  size_t avail = fill(n);
  return {buf_.data() + buf_begin_, std::min(n, avail)};
}

size_t InputStream::read(void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  if (fd_ < 0) {
    size_t k = std::min<uint64_t>(n, memory_.size() - position_);
    if (k) std::memcpy(out, memory_.data() + position_, k);
    position_ += k;
    return k;
  }
  size_t done = 0;
  size_t avail = buf_end_ - buf_begin_;
  if (avail) {
    size_t k = std::min(n, avail);
    std::memcpy(out, buf_.data() + buf_begin_, k);
    buf_begin_ += k;
    done = k;
  }
  // Large reads bypass the buffer.
  while (done < n && !eof_) {
    ssize_t r = ::read(fd_, out + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw errno_error("read failed", name_, errno);
    }
    if (r == 0) eof_ = true;
    done += static_cast<size_t>(r);
  }
  position_ += done;
  return done;
}

void InputStream::read_exact(void* dst, size_t n, const char* what) {
  if (read(dst, n) != n) throw invalid_input(std::string("truncated ") + what, name_);
}

void InputStream::skip(uint64_t n, const char* what) {
  if (fd_ < 0) {
    if (n > memory_.size() - position_) throw invalid_input(std::string("truncated ") + what, name_);
    position_ += n;
    return;
  }
  size_t avail = buf_end_ - buf_begin_;
  size_t k = static_cast<size_t>(std::min<uint64_t>(n, avail));
  buf_begin_ += k;
  position_ += k;
  n -= k;
  if (n == 0) return;
  if (regular_file_) {
    off_t cur = ::lseek(fd_, 0, SEEK_CUR);
    if (cur >= 0 && size_ && static_cast<uint64_t>(cur) + n <= *size_ &&
        ::lseek(fd_, static_cast<off_t>(n), SEEK_CUR) >= 0) {
      position_ += n;
      return;
    }
  }
  std::vector<uint8_t> scratch(static_cast<size_t>(std::min<uint64_t>(n, kReadChunk)));
  while (n > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(n, scratch.size()));
    size_t got = read(scratch.data(), want);
    if (got != want) throw invalid_input(std::string("truncated ") + what, name_);
    n -= got;
  }
}

bool InputStream::map() {
  if (fd_ < 0) return true;
  if (!regular_file_ || !owns_fd_) return false;
  // Bytes read ahead into buf_ are in the mapping too: position_ is the file offset.
  Buffer mapped = size_.value_or(0) > 0 ? Buffer::map_fd(fd_, name_) : Buffer();
  if (mapped.size() < position_) return false;
  ::close(fd_);
  fd_ = -1;
  memory_ = std::move(mapped);
  size_ = memory_.size();
  buf_.clear();
  buf_.shrink_to_fit();
  buf_begin_ = buf_end_ = 0;
  return true;
}

Buffer InputStream::read_view(size_t n, const char* what, BufferPool* pool) {
  if (fd_ < 0) {
    if (n > memory_.size() - position_) throw invalid_input(std::string("truncated ") + what, name_);
    Buffer view = n > 0 ? memory_.slice(position_, n) : Buffer();
    position_ += n;
    return view;
  }
  Buffer b = pool != nullptr ? pool->take(n) : Buffer::allocate(n);
  if (n > 0) read_exact(b.mutable_data(), n, what);
  return b;
}

Buffer read_small_file(const std::string& path, uint64_t max_bytes, const std::string& too_large) {
  return read_small_file(*InputStream::open(path), max_bytes, too_large);
}

Buffer read_small_file(InputStream& in, uint64_t max_bytes, const std::string& too_large) {
  if (in.size() && *in.size() > max_bytes) throw invalid_input(too_large, in.name());
  Buffer bytes = in.read_all();
  if (bytes.size() > max_bytes) throw invalid_input(too_large, in.name());
  return bytes;
}

Buffer InputStream::read_all() {
  if (fd_ < 0) {
    Buffer rest = memory_.slice(position_, memory_.size() - position_);
    position_ = memory_.size();
    return rest;
  }
  // Read straight into an aligned buffer, doubling it as data arrives (its size is
  // known up front for regular files).
  size_t cap = size_ && *size_ > position_ ? static_cast<size_t>(*size_ - position_) + 1 : kReadChunk;
  Buffer b = Buffer::allocate(cap);
  size_t have = 0;
  for (;;) {
    if (have == cap) {
      Buffer bigger = Buffer::allocate(cap * 2);
      std::memcpy(bigger.mutable_data(), b.data(), have);
      b = std::move(bigger);
      cap *= 2;
    }
    size_t got = read(b.mutable_data() + have, cap - have);
    if (got == 0) break;
    have += got;
  }
  return b.slice(0, have);
}

// ---------------------------------------------------------------- OutputStream

namespace {

// The descriptor that `path` names when it is one of this process's own descriptor
// names (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), else -1. These are
// links that no one else can plant, to whatever the descriptor is open on.
int descriptor_name(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(prefix) || path.size() == prefix.size() || path.size() > prefix.size() + 9) continue;
    int n = 0;
    for (size_t i = prefix.size(); i < path.size(); ++i) {
      if (path[i] < '0' || path[i] > '9') return -1;
      n = n * 10 + (path[i] - '0');
    }
    return n;
  }
  return -1;
}

}  // namespace

OutputTarget output_target(const std::string& path, const OutputOptions& options) {
  if (options.special_files && descriptor_name(path) >= 0) return OutputTarget::kStream;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return OutputTarget::kAbsent;
    throw errno_error("failed to look at the output", path, errno);
  }
  if (S_ISREG(st.st_mode)) return OutputTarget::kRegularFile;
  if (S_ISDIR(st.st_mode)) throw usage_error("is a directory", path);
  if (options.special_files && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) return OutputTarget::kStream;
  if (S_ISLNK(st.st_mode))
    throw usage_error("the output is a symbolic link, which is not written through; remove it or name its target", path);
  throw usage_error(std::string("the output is ") + file_type_noun(st.st_mode) + ", not a regular file", path);
}

std::unique_ptr<OutputStream> OutputStream::open(const std::string& path, const OutputOptions& options) {
  std::unique_ptr<OutputStream> s(new OutputStream());
  s->name_ = path;
  s->options_ = options;
  if (output_target(path, options) == OutputTarget::kStream) {
    s->buf_.reserve(kWriteChunk);
    if (const int n = descriptor_name(path); n >= 0) {
      // The descriptor itself, duplicated: its offset and O_APPEND are kept, as a
      // shell's redirection set them (opening the link anew would start at offset 0).
      s->fd_ = ::fcntl(n, F_DUPFD_CLOEXEC, 0);
      if (s->fd_ < 0) throw errno_error("failed to open for writing", path, errno);
      return s;
    }
    // A character device or FIFO named directly (/dev/null, a named pipe): written
    // directly, as renaming a file over it would replace the node. Opened without
    // following a link, and checked again by fstat: nothing swapped in since the
    // check is written to. A FIFO's open waits for its reader, as a pipe's writer does.
    s->fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    struct stat st;
    if (s->fd_ < 0) throw errno_error("failed to open for writing", path, errno);
    if (::fstat(s->fd_, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
      throw usage_error("the output changed while it was opened", path);
    return s;
  }
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  s->target_name_ = slash == std::string::npos ? path : path.substr(slash + 1);
  if (s->target_name_.empty()) throw usage_error("is a directory", path);
  const int probe = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (probe < 0) throw errno_error("failed to open for writing", path, errno);  // as a failed create would say
  ::close(probe);
  s->dir_ = std::make_unique<DirFd>(DirFd::open(dir));
  s->temp_name_ = "." + s->target_name_ + ".tmp-" + random_suffix();
  s->temp_path_ = (slash == std::string::npos ? "" : dir) + s->temp_name_;
  s->fd_ = ::openat(s->dir_->fd(), s->temp_name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (s->fd_ < 0) throw errno_error("failed to open for writing", path, errno);
  pending_add(s->temp_path_.c_str());
  s->buf_.reserve(kWriteChunk);
  return s;
}

std::unique_ptr<OutputStream> OutputStream::standard_output(const OutputOptions& options) {
  std::unique_ptr<OutputStream> s(new OutputStream());
  s->name_ = "<stdout>";
  s->options_ = options;
  s->standard_output_ = true;
  s->fd_ = STDOUT_FILENO;
  enlarge_pipe(s->fd_);
  s->buf_.reserve(kWriteChunk);
  return s;
}

std::unique_ptr<OutputStream> OutputStream::to_memory(std::vector<uint8_t>* sink) {
  std::unique_ptr<OutputStream> s(new OutputStream());
  s->name_ = "<memory>";
  s->sink_ = sink;
  return s;
}

OutputStream::~OutputStream() {
  if (committed_) return;
  if (temp_path_.empty() && fd_ >= 0 && !standard_output_) ::close(fd_);
  if (!temp_path_.empty()) {
    if (fd_ >= 0) ::close(fd_);
    ::unlinkat(dir_->fd(), temp_name_.c_str(), 0);
    pending_remove(temp_path_.c_str());
  }
}

std::optional<std::string> OutputStream::temp_path() const {
  if (temp_path_.empty()) return std::nullopt;
  return temp_path_;
}

void OutputStream::flush_buffer() {
  if (buf_.empty()) return;
  write_all(fd_, buf_.data(), buf_.size(), name_);
  buf_.clear();
}

void OutputStream::write(const void* data, size_t n) {
  if (committed_) throw internal_error("write after commit", name_);
  auto* p = static_cast<const uint8_t*>(data);
  position_ += n;
  if (sink_) {
    sink_->insert(sink_->end(), p, p + n);
    return;
  }
  if (buf_.size() + n <= kWriteChunk) {
    buf_.insert(buf_.end(), p, p + n);
    return;
  }
  flush_buffer();
  if (n >= kWriteChunk) write_all(fd_, p, n, name_);
  else buf_.insert(buf_.end(), p, p + n);
}

void OutputStream::commit() {
  if (committed_) return;
  if (sink_) {
    committed_ = true;
    return;
  }
  flush_buffer();
  check_mapped_files();  // what was computed from a truncated input is not published
  if (temp_path_.empty() && !standard_output_) {  // a device or FIFO opened directly
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw errno_error("close failed", name_, errno);
    committed_ = true;
    return;
  }
  if (standard_output_) {
    // Write errors surfaced in write(); the tool closes stdout at exit and reports a
    // failed close there. No fsync: it would force a redirected file to disk.
    if (options_.durable && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS)
      throw errno_error("fsync failed", name_, errno);
    committed_ = true;
    return;
  }
  if (options_.durable && ::fsync(fd_) != 0) throw errno_error("fsync failed", name_, errno);
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw errno_error("close failed", name_, errno);
  // renameat replaces whatever name is at the target (a link planted since the check
  // included) and never writes through it.
  if (::renameat(dir_->fd(), temp_name_.c_str(), dir_->fd(), target_name_.c_str()) != 0)
    throw errno_error("rename failed", name_, errno);
  pending_remove(temp_path_.c_str());
  committed_ = true;
  if (options_.durable && ::fsync(dir_->fd()) != 0) throw errno_error("fsync of directory failed", dir_->path(), errno);
}

size_t pending_temp_paths(const char** out, size_t max) {
  size_t n = 0;
  for (auto& slot : g_pending) {
    const char* p = slot.load();
    if (p && n < max) out[n++] = p;
  }
  return n;
}

}  // namespace tk::io
