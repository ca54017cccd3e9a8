// File metadata in text reports: one "  key: value" line per key, in key order. Values
// that hold a JSON object or array are shown re-serialised compactly on one line (key
// order kept, DEL and C1 controls as \uXXXX); any other value, any value the JSON policy
// refuses (malformed, nested deeper than kJsonMaxDepth, duplicate keys), and every key,
// through escape_text (display_text.h), so that one entry is always one line. The typed
// pairs of a GGUF input (key "gguf", io/gguf_kv_json.h) are summarised by count and size.
#pragma once

#include <string>

#include "tk/io/tensor_file.h"

namespace tk::cli {

// The display form of one metadata value.
std::string metadata_value_text(const std::string& value);

// "  key: value\n" for each entry; empty for empty metadata.
std::string metadata_lines(const io::Metadata& metadata);

}  // namespace tk::cli
