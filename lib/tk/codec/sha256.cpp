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

BackgroundSha256::BackgroundSha256(size_t max_pending) : max_pending_(max_pending) {
  thread_ = std::thread([this] { run(); });
}

BackgroundSha256::~BackgroundSha256() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackgroundSha256::update(Buffer piece) {
  if (piece.empty()) return;
  std::unique_lock lock(mutex_);
  // A piece larger than the limit is still taken when nothing waits, or update() would
  // block for ever.
  cv_.wait(lock, [&] { return pending_ == 0 || pending_ + piece.size() <= max_pending_ || error_; });
  if (error_) std::rethrow_exception(error_);
  pending_ += piece.size();
  queue_.push_back(std::move(piece));
  cv_.notify_all();
}

void BackgroundSha256::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) return;
    Buffer piece = queue_.front();
    lock.unlock();
    try {
      sha_.update({piece.data(), piece.size()});
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      queue_.clear();
      pending_ = 0;
      cv_.notify_all();
      return;
    }
    lock.lock();
    queue_.pop_front();
    pending_ -= piece.size();
    cv_.notify_all();
  }
}

Sha256Digest BackgroundSha256::finish() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (error_) std::rethrow_exception(error_);
  return sha_.finish();
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
