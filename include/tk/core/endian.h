// Little-endian integers at any alignment: the byte order of every format the toolkit
// reads and writes (safetensors, .npy, .tkz, lossless frames, store objects). The
// library supports little-endian hosts only, so a load or store is one memcpy, which
// compilers turn into a single move.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace tk {

static_assert(std::endian::native == std::endian::little, "tensorkit supports little-endian hosts only");

// Read the integer of type T stored at p.
template <typename T> T load_le(const uint8_t* p) {
  static_assert(std::is_integral_v<T>);
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Write v at p, sizeof(T) bytes.
template <typename T> void store_le(uint8_t* p, T v) {
  static_assert(std::is_integral_v<T>);
  std::memcpy(p, &v, sizeof v);
}

// Append v to out, sizeof(T) bytes.
template <typename T> void append_le(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  store_le(out.data() + at, v);
}

}  // namespace tk
