// The manifest of a committed step (manifest.json) and the names of the entries of a
// checkpoint directory. Internal to lib/tk/ckpt; the format is documented in
// docs/CHECKPOINT.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tk/ckpt/checkpoint.h"

namespace tk::ckpt {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kManifestFormat = "tensorkit-checkpoint";
inline constexpr int kManifestVersion = 1;

struct ShardInfo {
  std::string file;   // name inside the step directory
  uint64_t bytes = 0; // file size
};

struct Manifest {
  StepInfo info;      // dir, stored_bytes and durable are filled in by read_manifest
  std::vector<ShardInfo> shards;
};

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
