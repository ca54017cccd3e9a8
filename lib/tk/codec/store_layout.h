// Paths and shared steps of the model store, used by store.cpp and store_add.cpp.
// Internal to lib/tk/codec.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tk/codec/store_manifest.h"

namespace tk::codec::store_layout {

inline std::string objects_dir(const std::string& dir) { return dir + "/objects"; }
inline std::string manifests_dir(const std::string& dir) { return dir + "/manifests"; }
inline std::string temp_dir(const std::string& dir) { return dir + "/tmp"; }
inline std::string manifest_path(const std::string& dir, const std::string& name) {
  return manifests_dir(dir) + "/" + store_manifest_file_name(name);
}

// Largest manifest read (a file of a million tensors fits).
inline constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 30;

// The manifest of `name`, nullopt when there is none. Throws kInvalidInput when it
// cannot be parsed.
std::optional<StoreManifest> read_manifest(const std::string& dir, const std::string& name);

struct ManifestFile {
  std::string file_name;
  uint64_t bytes = 0;
  StoreManifest manifest;
};

// Every manifest of the store, sorted by name. A manifest that cannot be read or
// parsed throws kInvalidInput naming it, unless `skip_bad`.
std::vector<ManifestFile> read_manifests(const std::string& dir, bool skip_bad);

}  // namespace tk::codec::store_layout
