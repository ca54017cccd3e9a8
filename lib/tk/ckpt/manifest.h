// The manifest of a committed step (manifest.json) and the names of the entries of a
// checkpoint directory. Internal to lib/tk/ckpt; the format is documented in
// docs/CHECKPOINT.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tk/ckpt/checkpoint.h"

namespace tk::ckpt {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr uint64_t kMaxManifestBytes = uint64_t(1) << 30;  // larger ones are refused
inline constexpr const char* kManifestFormat = "tensorkit-checkpoint";
inline constexpr int kManifestVersion = 1;
// Version 2: a distributed step (world_size, parts, "sliced" tensors).
inline constexpr int kDistManifestVersion = 2;

struct ShardInfo {
  std::string file;   // name inside the step directory
  uint64_t bytes = 0; // file size
};

struct Manifest {
  StepInfo info;      // dir, stored_bytes and durable are filled in by read_manifest
  std::vector<ShardInfo> shards;
  std::vector<ShardInfo> parts;  // distributed steps: rank K's part file at index K
};

// Check a "sliced" entry of a step saved by `world_size` ranks: every slice from a rank
// below it, inside the global shape, of the right size and block count; no two slices
// overlapping; together covering the tensor. Throws an Error of `kind` naming `where`,
// the tensor, the ranks and the boxes concerned.
void check_sliced_entry(const TensorEntry& entry, uint32_t world_size, const std::string& where, ErrorKind kind);
// Bytes of one element of `dtype`; kUsage `where` when it is not a whole number of bytes.
uint64_t slice_element_bytes(DType dtype, const std::string& where);
// JSON of a slice and back (shared by manifests and rank parts).
nlohmann::json slice_to_json(const SliceEntry& slice);
SliceEntry slice_from_json(const nlohmann::json& j, const std::string& where);

// JSON with a trailing "checksum" field: XXH3-64 of the serialisation without it.
std::vector<uint8_t> manifest_encode(const Manifest& manifest);
// Parse and check; throws kInvalidInput naming `where` on any defect.
Manifest manifest_decode(std::span<const uint8_t> bytes, const std::string& where);
// Read DIR/step-N/manifest.json ("step-N" being `step_dir`).
Manifest read_manifest(const std::string& step_dir);

// "step-N", and its inverse for exact names only (no temp suffix, no leading zeros).
std::string step_dir_name(uint64_t step);
std::optional<uint64_t> parse_step_dir_name(const std::string& name);
// Entries a killed writer may leave: "step-N.tmp-*", "step-N.del-*", "latest.tmp-*".
bool is_leftover_name(const std::string& name);
// True when `name` may appear in a checkpoint directory at all.
bool is_checkpoint_entry_name(const std::string& name);

// Steps of `root` whose manifest exists, ascending. A step directory without a
// manifest cannot be produced by the protocol; it is ignored (and reported by verify).
std::vector<uint64_t> committed_steps(const std::string& root);

// XXH3-64 as 16 lower-case hex digits, and back.
std::string hash_hex(uint64_t hash);
std::optional<uint64_t> parse_hash_hex(const std::string& text);

}  // namespace tk::ckpt
