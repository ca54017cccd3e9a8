// The deduplicating model store: a directory of content-addressed objects, one per
// distinct tensor (keyed by the SHA-256 of its bytes, compressed with the lossless
// codec), and one manifest per stored file that restores it byte for byte. A tensor
// of a fine-tune is stored as a BitX object (its XOR with the matching tensor of a base
// file in the store, then the lossless codec) when that base is similar. docs/STORE.md
// describes the layout and the protocol.
//
// Concurrency: any number of processes may add, get and list at once (a shared flock
// on DIR/lock); remove, gc and verify --repair take it exclusively, so gc never deletes
// an object that an add in progress is about to refer to. Objects are written to
// DIR/tmp, fsynced and renamed into place; a manifest is published last by an atomic
// rename, so a killed add leaves no visible partial file (gc removes what it left).
// Readers (get, stats, verify) of a store they cannot write take no lock.
//
// Shared directories: everything below DIR is reached through directory descriptors
// that never follow a symbolic link (tk/io/dir_fd.h). An entry that is not what the
// layout says (a symlinked tmp/ or objects/xx, an object that is not a regular file)
// is refused with kInvalidInput naming it; verify reports it and verify --repair
// removes it. docs/STORE.md states the threat model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tk/codec/lossless.h"
#include "tk/io/dir_fd.h"
#include "tk/io/stream.h"

namespace tk::store {

struct StoreAddOptions {
  std::string name{};       // name in the store; default: the input's file name
  std::string base{};       // base file for BitX objects; empty: choose automatically
  bool deltas = true;       // false: never make BitX objects
  bool replace = false;     // a different file under a stored name replaces it (else kUsage)
  codec::LosslessOptions lossless{};
};

struct StoreAddResult {
  std::string name;
  bool replaced = false;        // a file of that name was there before
  bool safetensors = false;     // false: stored as one opaque object
  uint64_t logical_bytes = 0;   // size of the file
  uint64_t written_bytes = 0;   // bytes of the objects this add wrote
  uint64_t tensors = 0;
  uint64_t tensors_existing = 0;  // already in the store (deduplicated)
  uint64_t tensors_plain = 0;     // written as plain objects
  uint64_t tensors_delta = 0;     // written as BitX objects
  // Objects already in the store that failed their check (corrupt: they no longer
  // decode to their key) and were written again: "OBJECT_PATH: WHY", one each.
  std::vector<std::string> replaced_objects;
  std::string base;             // base file chosen; empty when none
  double base_similarity = 0;   // fraction of equal bits in the sample against it
};

// One stored file, as listed by ls and stats.
struct StoreFileInfo {
  std::string name;
  std::string kind;             // "safetensors" or "opaque"
  std::string base;
  std::string created;
  std::string sha256;           // hex
  uint64_t logical_bytes = 0;   // size of the file
  uint64_t stored_bytes = 0;    // bytes of the distinct objects its manifest refers to
  uint64_t unique_bytes = 0;    // of those, bytes no other file refers to
  uint64_t tensors = 0;
  uint64_t objects = 0;         // distinct objects referred to
  uint64_t manifest_bytes = 0;
};

struct StoreStats {
  std::vector<StoreFileInfo> files;  // sorted by name
  uint64_t logical_bytes = 0;        // of every file
  uint64_t object_bytes = 0;         // of every object present
  uint64_t manifest_bytes = 0;
  uint64_t objects = 0;
  uint64_t unreferenced_objects = 0;  // present but not reachable from a manifest (gc removes them)
  uint64_t unreferenced_bytes = 0;
  uint64_t missing_objects = 0;       // referred to but absent (the store is damaged)
  uint64_t bad_objects = 0;           // reachable objects whose header is not an object's
                                      // (stats reads headers only; verify decodes all)
  uint64_t stored_bytes() const { return object_bytes + manifest_bytes; }
};

struct StoreGetResult {
  uint64_t bytes = 0;
  uint64_t tensors = 0;
  std::string sha256;  // hex, checked
};

struct StoreVerifyReport {
  uint64_t objects_checked = 0;
  uint64_t manifests_checked = 0;
  // One line per defect, "WHERE: WHAT": a corrupt or misplaced object, an entry of
  // the wrong type, an unreadable manifest, a manifest whose objects are missing or
  // bad or whose file SHA-256 does not match.
  std::vector<std::string> problems;
  std::vector<std::string> removed;       // with repair: entries removed (paths)
  std::vector<std::string> unrestorable;  // names of files that cannot be restored now
  bool ok() const { return problems.empty(); }
};

struct StoreGcReport {
  uint64_t objects_removed = 0;
  uint64_t bytes_freed = 0;
  uint64_t temp_removed = 0;  // leftovers of killed adds
};

// Whether `dir` is a directory holding a store's marker file (store.json). Looks at
// nothing else: Store::open checks the rest.
bool is_store_dir(const std::string& dir);

class Store {
 public:
  // Open the store at `dir`. With `create`, make it when missing (add does); otherwise
  // a missing directory is kIo ("no such store") and a directory that is not a store
  // kInvalidInput.
  static Store open(const std::string& dir, bool create);

  const std::string& dir() const { return dir_; }

  // Add the file at `path`, under options.name or else the file's name. A file of the
  // same name is replaced. Throws kUsage for a bad name or --base on a file that is not
  // safetensors, kInvalidInput for an unknown base.
  StoreAddResult add(const std::string& path, const StoreAddOptions& options);
  // The same for a stream read to its end (standard input, say): options.name is
  // required (kUsage when empty).
  StoreAddResult add(std::unique_ptr<io::InputStream> in, const StoreAddOptions& options);

  // Write file `name` to `out` (not committed: the caller commits after this returns),
  // decoding each object, checking each object's SHA-256 before its bytes are written
  // and the whole file's SHA-256 at the end. Throws kInvalidInput for an unknown name
  // or a corrupt or missing object, naming the tensor and object.
  StoreGetResult get(const std::string& name, io::OutputStream& out, int threads = 0) const;

  // Whether a file of that name is stored.
  bool contains(const std::string& name) const;
  // Remove file `name` (its objects stay until gc). kInvalidInput when unknown.
  void remove(const std::string& name);
  // Remove every object no manifest refers to, directly or as the base of a BitX
  // object, and the temporaries of killed adds. Refuses (kInvalidInput) when a
  // manifest cannot be read, rather than delete what it might refer to.
  StoreGcReport gc();
  StoreStats stats() const;
  // Decode every object and check its SHA-256 against its name, and every manifest
  // (segments' objects present and decoding to the segment's size, the whole file's
  // SHA-256 when all are good). With `repair` (exclusive lock), remove the bad objects
  // and odd entries, so that a later add stores them again, and name the files left
  // unrestorable. Throws only for what stops the walk itself (kIo; a store whose
  // objects/ or manifests/ is not a directory).
  StoreVerifyReport verify(bool repair, int threads = 0);

 private:
  Store(std::string dir, io::DirFd root) : dir_(std::move(dir)), root_(std::move(root)) {}

  std::string dir_;
  io::DirFd root_;
};

}  // namespace tk::store
