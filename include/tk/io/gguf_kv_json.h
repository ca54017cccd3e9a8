// GGUF's typed key-value pairs as one JSON text, so that they survive a trip through a
// format whose metadata holds only strings (safetensors `__metadata__`, HDF5 attributes)
// and come back to GGUF bit for bit.
//
// The text is the value of the metadata key kGgufPairsKey: a JSON array of the pairs in
// file order, each {"key": K, "type": T, "value": V}, an array pair with "elem": E (its
// element type) and a list of elements as V. Types: "u8" "i8" "u16" "i16" "u32" "i32"
// "u64" "i64" "f32" "f64" "bool" "string" "array". Values (scalars and elements alike):
//   integers of up to 32 bits: JSON integers; u64 and i64: decimal strings (JSON
//     numbers past 2^53 lose digits in many readers);
//   f32, f64: JSON numbers (shortest text that reads back to the same value), but NaN,
//     Inf and -0.0, which JSON cannot say, as the string "0x" + the value's bits in hex
//     ("0x7fc00000");
//   bool: true or false;
//   string: a JSON string when its bytes are valid UTF-8, else {"hex": BYTES}.
// The display text of each pair (gguf_value_text) stays beside it under its own key,
// for people and tinfo.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tk/io/gguf.h"

namespace tk::io {

inline constexpr const char* kGgufPairsKey = "gguf";

// The pairs as the JSON text above. Throws kInvalidInput for a key that is not UTF-8.
std::string gguf_kvs_to_json(const std::vector<GgufKv>& kvs);

// The pairs from that text. Throws kInvalidInput (located at `where`) for text that is
// not such an array, an unknown type, a value out of its type's range, or a nested
// array.
std::vector<GgufKv> gguf_kvs_from_json(std::string_view text, const std::string& where = {});

}  // namespace tk::io
