// The whole-file digest a .tkz footer records for the file it restores: XXH3-128 by
// default, or SHA-256 on request (what `sha256sum` prints). Each piece is hashed on a
// thread of its own, so that hashing overlaps the caller's coding of the file.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tk/core/background.h"
#include "tk/core/buffer.h"

namespace tk::codec {

enum class DigestKind : uint8_t {
  kXxh3_128,  // XXH3-128, canonical (big-endian) bytes: what `xxh128sum` prints
  kSha256,    // SHA-256: what `sha256sum` prints
};

struct FileDigest {
  DigestKind kind = DigestKind::kXxh3_128;
  std::array<uint8_t, 32> bytes{};  // XXH3-128 uses the first 16, the rest zero

  size_t size() const { return kind == DigestKind::kSha256 ? 32 : 16; }
  // "xxh3_128" or "sha256": the key of reports.
  std::string_view name() const { return kind == DigestKind::kSha256 ? "sha256" : "xxh3_128"; }
  // "XXH3-128" or "SHA-256": for people.
  std::string_view label() const { return kind == DigestKind::kSha256 ? "SHA-256" : "XXH3-128"; }
  // Lower-case hexadecimal of size() bytes.
  std::string hex() const;
  bool operator==(const FileDigest&) const = default;
};

// Incremental digest of consecutive pieces, hashed on the caller's thread.
class StreamDigest {
 public:
  explicit StreamDigest(DigestKind kind);
  ~StreamDigest();
  StreamDigest(const StreamDigest&) = delete;
  StreamDigest& operator=(const StreamDigest&) = delete;

  void update(const void* data, size_t size);
  // The digest of every piece so far; the object must not be used afterwards.
  FileDigest finish();

 private:
  struct State;
  DigestKind kind_;
  std::unique_ptr<State> state_;
};

// Incremental digest of consecutive pieces, hashed on a thread of its own. Each piece's
// Buffer is kept alive until it has been hashed; at most `max_pending` bytes wait,
// beyond which update() blocks. SHA-256 runs at 1.5-2 GB/s with the SHA extensions (as
// slow as the codecs, and serial); XXH3-128 at memory speed.
class BackgroundDigest {
 public:
  BackgroundDigest(DigestKind kind, size_t max_pending);
  ~BackgroundDigest();
  BackgroundDigest(const BackgroundDigest&) = delete;
  BackgroundDigest& operator=(const BackgroundDigest&) = delete;

  void update(Buffer piece) { queue_->push(std::move(piece)); }
  // Wait for every piece and return the digest; the object must not be used afterwards.
  FileDigest finish();

 private:
  StreamDigest digest_;
  std::unique_ptr<BackgroundQueue> queue_;  // after digest_: joined before digest_ goes
};

}  // namespace tk::codec
