// BitX delta coding (ZipLLM): a fine-tuned tensor is XORed bit for bit with the tensor
// of the same name, dtype and shape in its base model; the XOR is mostly zero bits in
// the exponent and upper mantissa, so the byte-grouped lossless frame codes it far
// smaller than the tensor itself.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tk/codec/lossless.h"
#include "tk/codec/sha256.h"
#include "tk/core/buffer.h"
#include "tk/io/tensor_file.h"

namespace tk::codec {

// out[i] = a[i] ^ b[i]; the three spans have the same size (out may alias a or b).
void bitx_xor(std::span<const uint8_t> a, std::span<const uint8_t> b, std::span<uint8_t> out);

// Code `target` as a lossless frame of target ^ base (same size, elements of `dtype`),
// a delta frame (LosslessOptions::delta: planes of plain bytes).
std::vector<uint8_t> bitx_encode(DType dtype, std::span<const uint8_t> target, std::span<const uint8_t> base,
                                 const LosslessOptions& options = {});

// Decode a frame from bitx_encode into `out` (base.size() bytes) and XOR `base` back in.
// Throws kInvalidInput when the frame is corrupt or does not decode to base.size() bytes.
void bitx_decode(std::span<const uint8_t> frame, std::span<const uint8_t> base, std::span<uint8_t> out,
                 int threads = 0);

// XXH3-64 of a tensor's bytes: how a container names the base tensor it depends on.
uint64_t bitx_tensor_hash(std::span<const uint8_t> bytes);

// A base model: a safetensors file (mapped, or read whole from a pipe), its SHA-256
// and its tensors by name.
class BitxBase {
 public:
  struct Tensor {
    io::TensorInfo info;
    std::span<const uint8_t> bytes;
  };

  // Read and hash the file at `path`. Throws kIo when it cannot be read and
  // kInvalidInput when it is not a valid safetensors file.
  static std::unique_ptr<BitxBase> open(const std::string& path);
  // The same from a stream (standard input, say), read to its end.
  static std::unique_ptr<BitxBase> open(std::unique_ptr<io::InputStream> in);

  const std::string& name() const { return name_; }
  const Sha256Digest& sha256() const { return sha256_; }
  // The tensor named `name`, or nullptr.
  const Tensor* find(std::string_view name) const;
  // The tensor named like `info` with the same dtype and shape, or nullptr.
  const Tensor* match(const io::TensorInfo& info) const;

 private:
  std::string name_;
  Buffer file_;
  Sha256Digest sha256_{};
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string_view, size_t> by_name_;
};

}  // namespace tk::codec
