#include "tk/codec/file_digest.h"

#include "tk/codec/xxh3.h"

#include <cstring>

#include "tk/codec/sha256.h"

namespace tk::codec {

std::string FileDigest::hex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * size());
  for (size_t i = 0; i < size(); ++i) {
    text.push_back(kHex[bytes[i] >> 4]);
    text.push_back(kHex[bytes[i] & 15]);
  }
  return text;
}

struct BackgroundDigest::State {
  Sha256 sha;
  XXH3_state_t xxh;
};

BackgroundDigest::BackgroundDigest(DigestKind kind, size_t max_pending)
    : kind_(kind), state_(std::make_unique<State>()) {
  XXH3_128bits_reset(&state_->xxh);
  queue_ = std::make_unique<BackgroundQueue>(
      [this](const Buffer& piece) {
        if (kind_ == DigestKind::kSha256)
          state_->sha.update({piece.data(), piece.size()});
        else
          XXH3_128bits_update(&state_->xxh, piece.data(), piece.size());
      },
      max_pending);
}

BackgroundDigest::~BackgroundDigest() = default;

FileDigest BackgroundDigest::finish() {
  queue_->finish();
  FileDigest digest;
  digest.kind = kind_;
  if (kind_ == DigestKind::kSha256) {
    const Sha256Digest sha = state_->sha.finish();
    std::memcpy(digest.bytes.data(), sha.data(), sha.size());
  } else {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state_->xxh));
    std::memcpy(digest.bytes.data(), canonical.digest, sizeof canonical.digest);
  }
  return digest;
}

}  // namespace tk::codec
