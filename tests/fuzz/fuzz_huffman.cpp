// libFuzzer target for the Huffman decoder (lib/tk/codec/huffman.cpp). Each input is
// used twice: as a coded stream, after a 3-byte prefix giving the size to decode
// (at most 1 MiB), which must decode or be refused with kInvalidInput; and as data,
// which when the encoder plans a code must encode within its bound and decode again
// to itself.
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "tk/codec/huffman.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tk::fuzz::check;
  static tk::codec::HuffmanDecoder decoder;  // reused, as the codec's threads reuse theirs
  static tk::codec::HuffmanEncoder encoder;

  if (size >= 3) {
    const size_t decoded = data[0] | size_t{data[1]} << 8 | (size_t{data[2]} & 0x0f) << 16;
    std::vector<uint8_t> out(decoded);
    try {
      decoder.decode({data + 3, size - 3}, out);
    } catch (const tk::Error& e) {
      tk::fuzz::expect_kind(e);
    }
  }

  std::span<const uint8_t> src(data, size);
  const size_t planned = encoder.plan(src);
  if (planned == SIZE_MAX) return 0;
  std::vector<uint8_t> coded(planned + tk::codec::kHuffmanSlack);
  const size_t n = encoder.encode(src, coded.data());
  check(n <= planned);
  std::vector<uint8_t> back(size);
  decoder.decode({coded.data(), n}, back);
  check(std::equal(back.begin(), back.end(), data));
  return 0;
}
