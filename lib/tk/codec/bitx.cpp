#include "tk/codec/bitx.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

#include "tk/core/error.h"
#include "tk/io/safetensors.h"
#include "tk/io/stream.h"

namespace tk::codec {

void bitx_xor(std::span<const uint8_t> a, std::span<const uint8_t> b, std::span<uint8_t> out) {
  if (a.size() != b.size() || a.size() != out.size()) throw internal_error("bitx_xor: sizes differ");
  const size_t n = out.size();
  const uint8_t* pa = a.data();
  const uint8_t* pb = b.data();
  uint8_t* po = out.data();
  // Word-sized steps through memcpy: GCC turns this into vector XORs, and it stays
  // correct for any alignment and for out aliasing a or b.
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, pa + i, 8);
    std::memcpy(&y, pb + i, 8);
    x ^= y;
    std::memcpy(po + i, &x, 8);
  }
  for (; i < n; ++i) po[i] = pa[i] ^ pb[i];
}

std::vector<uint8_t> bitx_encode(DType dtype, std::span<const uint8_t> target, std::span<const uint8_t> base,
                                 const LosslessOptions& options) {
  Buffer delta = Buffer::allocate(target.size());
  std::span<uint8_t> d(delta.mutable_data(), delta.size());
  bitx_xor(target, base, d);
  LosslessOptions as_delta = options;
  as_delta.delta = true;
  return lossless_compress(dtype, d, as_delta);
}

void bitx_decode(std::span<const uint8_t> frame, std::span<const uint8_t> base, std::span<uint8_t> out,
                 int threads) {
  if (out.size() != base.size()) throw internal_error("bitx_decode: output and base sizes differ");
  if (lossless_decoded_size(frame) != base.size())
    throw invalid_input("delta frame size does not match the base tensor");
  lossless_decompress(frame, out, threads);
  bitx_xor(out, base, out);
}

uint64_t bitx_tensor_hash(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::unique_ptr<BitxBase> BitxBase::open(const std::string& path) { return open(io::InputStream::open(path)); }

std::unique_ptr<BitxBase> BitxBase::open(std::unique_ptr<io::InputStream> in) {
  auto base = std::unique_ptr<BitxBase>(new BitxBase());
  base->name_ = in->name();
  base->file_ = in->is_regular_file() && in->position() == 0 ? Buffer::map_file(in->path()) : in->read_all();
  in.reset();
  const Buffer& file = base->file_;
  const std::string& where = base->name_;
  if (file.size() < 8) throw invalid_input("base is not a safetensors file (too short)", where);
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);
  if (header_len > io::kSafetensorsMaxHeader || header_len > file.size() - 8)
    throw invalid_input("base is not a safetensors file (bad header length)", where);
  io::SafetensorsHeader header;
  try {
    header = io::safetensors_parse_header({file.data() + 8, header_len});
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  const uint64_t data_begin = 8 + header_len;
  if (header.data_size > file.size() - data_begin) throw invalid_input("base is truncated", where);
  base->sha256_ = codec::sha256({file.data(), file.size()});
  for (size_t i = 0; i < header.tensors.size(); ++i) {
    const auto& info = header.tensors[i];
    base->tensors_.push_back({info, {file.data() + data_begin + header.offsets[i], info.nbytes}});
  }
  for (size_t i = 0; i < base->tensors_.size(); ++i) base->by_name_.emplace(base->tensors_[i].info.name, i);
  return base;
}

const BitxBase::Tensor* BitxBase::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const BitxBase::Tensor* BitxBase::match(const io::TensorInfo& info) const {
  const Tensor* t = find(info.name);
  if (t == nullptr || t->info.dtype != info.dtype || t->info.shape != info.shape) return nullptr;
  return t;
}

}  // namespace tk::codec
