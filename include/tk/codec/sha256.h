// SHA-256 (OpenSSL libcrypto) for whole-file identities: the original file a .tkz
// restores and the base file a BitX delta was made against.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

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

// Lower-case hexadecimal, 64 characters.
std::string sha256_hex(const Sha256Digest& digest);

}  // namespace tk::codec
