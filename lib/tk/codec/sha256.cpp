#include "tk/codec/sha256.h"

#include <openssl/evp.h>

#include "tk/core/error.h"

namespace tk::codec {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
  ~State() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  if (state_->ctx == nullptr || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1)
    throw unavailable("cannot initialise SHA-256 (libcrypto)");
}

Sha256::~Sha256() = default;

void Sha256::update(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  if (EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()) != 1) throw internal_error("SHA-256 update failed");
}

Sha256Digest Sha256::finish() {
  Sha256Digest digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(state_->ctx, digest.data(), &length) != 1 || length != digest.size())
    throw internal_error("SHA-256 final failed");
  return digest;
}

Sha256Digest sha256(std::span<const uint8_t> bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish();
}

std::string sha256_hex(const Sha256Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(64);
  for (uint8_t b : digest) {
    text.push_back(kHex[b >> 4]);
    text.push_back(kHex[b & 15]);
  }
  return text;
}

}  // namespace tk::codec
