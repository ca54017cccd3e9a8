// SHA-256 (OpenSSL libcrypto) for whole-file identities: the original file a .tkz
// restores and the base file a BitX delta was made against.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "tk/core/background.h"
#include "tk/core/buffer.h"

namespace tk::codec {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental SHA-256: update() with consecutive pieces, then finish() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const uint8_t> bytes);
  // The digest of everything given to update(); the object must not be used afterwards.
  Sha256Digest finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Sha256Digest sha256(std::span<const uint8_t> bytes);

// SHA-256 on a thread of its own, so that hashing a file overlaps the caller's work on
// it (SHA-256 runs at 1.5-2 GB/s with the SHA extensions: as slow as the codecs).
// Each piece's Buffer is kept alive until it has been hashed; at most `max_pending`
// bytes wait, beyond which update() blocks.
class BackgroundSha256 {
 public:
  explicit BackgroundSha256(size_t max_pending = size_t{256} << 20)
      : queue_([this](const Buffer& piece) { sha_.update({piece.data(), piece.size()}); }, max_pending) {}

  void update(Buffer piece) { queue_.push(std::move(piece)); }
  // Wait for every piece and return the digest; the object must not be used afterwards.
  Sha256Digest finish() {
    queue_.finish();
    return sha_.finish();
  }

 private:
  Sha256 sha_;
  BackgroundQueue queue_;  // after sha_: joined before sha_ goes
};

// Lower-case hexadecimal, 64 characters.
std::string sha256_hex(const Sha256Digest& digest);

}  // namespace tk::codec
