// Names and shared steps of the model store, used by store.cpp, add.cpp and
// verify.cpp. Internal to lib/tk/store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tk/codec/sha256.h"
#include "tk/core/error.h"
#include "tk/io/dir_fd.h"
#include "tk/store/manifest.h"

namespace tk::store::layout {

inline constexpr const char* kObjectsDir = "objects";
inline constexpr const char* kManifestsDir = "manifests";
inline constexpr const char* kTempDir = "tmp";

// Largest manifest read (a file of a million tensors fits).
inline constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 30;

// Subdirectory `name` of the store at `root`. Throws kInvalidInput when it is missing
// ("not a model store") or is not a directory (a symbolic link, say).
io::DirFd open_subdir(const io::DirFd& root, const char* name);

// The manifest of `name`, nullopt when there is none. Throws kInvalidInput when it
// cannot be parsed.
std::optional<StoreManifest> read_manifest(const io::DirFd& root, const std::string& name);

struct ManifestFile {
  std::string file_name;
  uint64_t bytes = 0;
  StoreManifest manifest;
};

// Every manifest of the store, sorted by name. A manifest that cannot be read or
// parsed (kInvalidInput) throws, naming it, unless `bad` is given: it is then added
// there and left out.
std::vector<ManifestFile> read_manifests(const io::DirFd& root, std::vector<Error>* bad = nullptr);

struct PresentObject {
  codec::Sha256Digest key{};
  uint64_t bytes = 0;
};

// An entry of objects/ in an object's place but not of its type: a shard that is not
// a directory, or an object file that is not a regular file.
struct OddEntry {
  std::string shard;  // "" when the entry is a shard of objects/ itself
  std::string name;
  Error error;        // kInvalidInput naming its path
};

// Every object present, by walking objects/<xx>/ (xx two lowercase hex digits; objects
// named by their 64 hex digits starting with xx); entries of other names are left
// alone. An odd entry throws its error, unless `odd` is given: it is then added there.
std::vector<PresentObject> present_objects(const io::DirFd& objects, std::vector<OddEntry>* odd = nullptr);

}  // namespace tk::store::layout
