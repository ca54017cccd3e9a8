// The object directory of the model store: content-addressed objects named by the
// SHA-256 of the bytes they decode to, at objects/<first two hex digits>/<64 hex digits>.
// An object is a 48-byte header and a lossless frame (lossless.h):
//
//   0  "TKSO"     magic
//   4  u8         version (1)
//   5  u8         kind: 1 plain (the frame decodes to the bytes), 2 BitX (the frame
//                 decodes to the bytes XOR the base object's bytes, same length)
//   6  u16        reserved, 0
//   8  u64 LE     decoded size in bytes
//   16 [32]       SHA-256 of the base object (BitX), zeros otherwise
//   48 ...        the lossless frame
//
// Internal to lib/tk/store.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "tk/codec/lossless.h"
#include "tk/codec/sha256.h"
#include "tk/core/buffer.h"
#include "tk/core/dtype.h"
#include "tk/io/dir_fd.h"

namespace tk::store {

inline constexpr size_t kStoreObjectHeaderBytes = 48;
// Longest chain of BitX bases an object may have: add stores a tensor plainly rather
// than deepen a chain further, and get treats a longer chain as corruption (a cycle).
inline constexpr int kStoreMaxDeltaDepth = 16;

enum class StoreObjectKind : uint8_t { kPlain = 1, kBitx = 2 };

struct StoreObjectHeader {
  StoreObjectKind kind = StoreObjectKind::kPlain;
  uint64_t decoded_size = 0;
  codec::Sha256Digest base{};  // BitX only
};

// Encode `bytes` (elements of `dtype`) as a plain object.
std::vector<uint8_t> store_object_plain(DType dtype, std::span<const uint8_t> bytes, const codec::LosslessOptions& options);
// Encode `bytes` as a BitX object against `base_bytes` (same length), whose key is
// `base_key`.
std::vector<uint8_t> store_object_bitx(DType dtype, std::span<const uint8_t> bytes, std::span<const uint8_t> base_bytes,
                                       const codec::Sha256Digest& base_key, const codec::LosslessOptions& options);

// Parse an object's header. Throws kInvalidInput naming `where` when it is not one.
StoreObjectHeader store_object_parse_header(std::span<const uint8_t> object, const std::string& where);

// The objects/ directory of a store, walked by descriptor (tk/io/dir_fd.h): a shard
// directory or an object that is a symbolic link or of the wrong type is refused with
// kInvalidInput naming its path, never followed.
class StoreObjects {
 public:
  // Open root/objects. Throws kInvalidInput when it is missing or not a directory.
  explicit StoreObjects(const io::DirFd& root);
  explicit StoreObjects(const std::string& store_dir) : StoreObjects(io::DirFd::open(store_dir)) {}

  const io::DirFd& dir() const { return objects_; }
  std::string path(const codec::Sha256Digest& key) const;  // for messages
  bool contains(const codec::Sha256Digest& key) const;
  // Stored size of an object in bytes; nullopt when it is missing.
  std::optional<uint64_t> stored_size(const codec::Sha256Digest& key) const;
  // The header of an object; nullopt when it is missing. Throws kInvalidInput when the
  // file is not an object.
  std::optional<StoreObjectHeader> header(const codec::Sha256Digest& key) const;
  // Number of BitX links below `key` (0 for a plain object), reading headers only;
  // nullopt when an object of the chain is missing.
  std::optional<int> delta_depth(const codec::Sha256Digest& key) const;

  // Write `object` under `key` unless an object of that name exists (with `replace`:
  // whatever is there, which the caller found corrupt, is replaced): a temporary file
  // in `temp_dir`, fsynced, renamed into place. The shard directory is not fsynced: the
  // caller passes `dirty_shards` (shard names; "" for objects/ itself) to sync() before
  // publishing a manifest that refers to the object. Returns the bytes written (0 when
  // it existed).
  uint64_t put(const codec::Sha256Digest& key, std::span<const uint8_t> object, const io::DirFd& temp_dir,
               std::set<std::string>& dirty_shards, bool replace = false);
  void sync(const std::set<std::string>& dirty_shards) const;
  // Remove object `key` (whatever entry has its name); false when there is none.
  bool remove(const codec::Sha256Digest& key) const;

  // Decode object `key`, which must decode to `expected_size` bytes, following BitX
  // bases, handing its bytes to `sink` in pieces of about 16 MiB, and check the SHA-256
  // of the result against `key`. Memory is a piece (and a piece of each delta), not the
  // object. Errors are kInvalidInput naming the object and `where` (e.g. the tensor): a
  // missing object, a missing base, a corrupt frame, a SHA-256 mismatch; a mismatch is
  // found after the last piece, so the sink may have taken bytes of a corrupt object.
  using ObjectSink = std::function<void(std::span<const uint8_t> piece)>;
  void stream(const codec::Sha256Digest& key, uint64_t expected_size, const std::string& where, const ObjectSink& sink,
              int threads = 0) const;
  // The whole object, checked as stream() checks it. For a base that add encodes a delta
  // against (the tensor being added is as large).
  Buffer load(const codec::Sha256Digest& key, uint64_t expected_size, const std::string& where, int threads = 0) const;
  // Decode a whole object without the SHA-256 check (each chunk's XXH3 is still
  // checked). For sampling the similarity of a candidate base while adding.
  Buffer load_unverified(const codec::Sha256Digest& key, uint64_t expected_size, const std::string& where,
                         int threads = 0) const;

 private:
  struct Link;
  // objects/<first two hex digits of key>, nullopt when missing.
  std::optional<io::DirFd> shard(const codec::Sha256Digest& key) const;
  // Open `key` and its bases, checking each header and frame table.
  std::vector<Link> open_chain(const codec::Sha256Digest& key, uint64_t expected_size, const std::string& where) const;
  void stream_chain(const std::vector<Link>& chain, uint64_t expected_size, const ObjectSink& sink, int threads) const;
  void read_chain(const std::vector<Link>& chain, uint64_t offset, std::span<uint8_t> out, std::vector<codec::Sha256>* hashes,
                  int threads) const;

  io::DirFd objects_;
};

}  // namespace tk::store
