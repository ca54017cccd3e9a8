// Manifests of the model store: one JSON document per stored file, at
// manifests/<encoded name>.json, listing the segments that rebuild the file byte for
// byte (see docs/STORE.md). Internal to lib/tk/store.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tk/codec/sha256.h"

namespace tk::store {

// A run of the file's bytes held by one object. For a safetensors file the segments
// are the header (length prefix and JSON), each tensor's data, and any other bytes
// (gaps, trailing bytes); an opaque file is one segment.
struct StoreSegment {
  uint64_t offset = 0;
  uint64_t size = 0;
  codec::Sha256Digest key{};
  std::string tensor;           // tensor name; empty for header and other bytes
  std::string dtype;            // safetensors dtype name (tensors only)
  std::vector<uint64_t> shape;  // (tensors only)
};

struct StoreManifest {
  std::string name;             // name in the store
  std::string kind;             // "safetensors" or "opaque"
  uint64_t size = 0;            // bytes of the original file
  codec::Sha256Digest sha256{};        // of the whole original file
  std::string base;             // file whose tensors BitX objects were made against; may be empty
  std::string created;          // UTC, "2025-01-31T12:00:00Z"
  std::vector<StoreSegment> segments;  // in file order, contiguous from 0 to size
};

// How a segment is named in messages: "tensor 'w'", "header", "bytes at N".
std::string store_segment_label(const StoreSegment& segment);

// A digest from its 64 lowercase hex digits; nullopt for anything else.
std::optional<codec::Sha256Digest> sha256_parse_hex(std::string_view hex);

std::vector<uint8_t> store_manifest_serialize(const StoreManifest& manifest);
// Parse and validate a manifest: every key 64 hex digits, segments contiguous from 0 to
// size, tensor segments with a known dtype. Throws kInvalidInput naming `where`.
StoreManifest store_manifest_parse(std::span<const uint8_t> json, const std::string& where);

// Check that `name` can name a file in the store: 1 to 200 printable ASCII characters,
// not "." or "..". Throws kUsage.
void store_check_name(const std::string& name);
// File name of a manifest: [A-Za-z0-9._-] kept (a leading '.' escaped), every other
// byte as %XX, then ".json". A file in manifests/ is a manifest when its name could
// have been made so (the name itself is read from the manifest).
std::string store_manifest_file_name(const std::string& name);
bool store_is_manifest_file_name(const std::string& file_name);

}  // namespace tk::store
