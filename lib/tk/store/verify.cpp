// Store::verify: decode every object and check it against its name, check every
// manifest against the objects it refers to, and with repair remove what is bad.
#include <map>
#include <set>

#include "tk/core/error.h"
#include "tk/store/files.h"
#include "tk/store/layout.h"
#include "tk/store/objects.h"
#include "tk/store/store.h"

namespace tk::store {

namespace {

namespace fs = files;

std::string error_line(const Error& e) { return e.where().empty() ? e.message() : e.message() + " (" + e.where() + ")"; }

enum class ObjectState { kGood, kBad, kMissing, kBadBase };

// The verdict on each object, decoded at most once (a BitX object after its base).
class ObjectChecker {
 public:
  ObjectChecker(const StoreObjects& objects, int threads) : objects_(objects), threads_(threads) {}

  ObjectState check(const codec::Sha256Digest& key, int depth = 0) {
    if (auto it = state_.find(key); it != state_.end()) return it->second;
    ObjectState st = ObjectState::kGood;
    try {
      auto h = objects_.header(key);
      if (!h) {
        st = ObjectState::kMissing;
      } else if (h->kind == StoreObjectKind::kBitx && depth >= kStoreMaxDeltaDepth) {
        throw invalid_input("corrupt object: chain of BitX bases too long", objects_.path(key));
      } else if (h->kind == StoreObjectKind::kBitx && check(h->base, depth + 1) != ObjectState::kGood) {
        st = ObjectState::kBadBase;  // itself unknown: it is judged once its base is repaired
      } else {
        objects_.stream(key, h->decoded_size, "", [](std::span<const uint8_t>) {}, threads_);
        sizes_[key] = h->decoded_size;
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      st = ObjectState::kBad;
      why_.insert_or_assign(key, Error(e.kind(), e.message(), objects_.path(key)));
    }
    state_[key] = st;
    return st;
  }
  // For good objects: the size they decode to.
  uint64_t decoded_size(const codec::Sha256Digest& key) const { return sizes_.at(key); }
  const std::map<codec::Sha256Digest, Error>& bad() const { return why_; }

 private:
  const StoreObjects& objects_;
  int threads_;
  std::map<codec::Sha256Digest, ObjectState> state_;
  std::map<codec::Sha256Digest, uint64_t> sizes_;
  std::map<codec::Sha256Digest, Error> why_;
};

// What is wrong with a manifest, or nothing when it restores its file.
std::optional<std::string> manifest_problem(const StoreManifest& m, ObjectChecker& checker,
                                            const StoreObjects& objects, int threads) {
  for (const StoreSegment& s : m.segments) {
    const std::string seg = store_segment_label(s) + ", object " + codec::sha256_hex(s.key);
    switch (checker.check(s.key)) {
      case ObjectState::kGood:
        if (checker.decoded_size(s.key) != s.size)
          return "object decodes to " + std::to_string(checker.decoded_size(s.key)) + " bytes, the segment has " +
                 std::to_string(s.size) + " (" + seg + ")";
        break;
      case ObjectState::kMissing: return "missing object (" + seg + ")";
      case ObjectState::kBad: return "corrupt object (" + seg + ")";
      case ObjectState::kBadBase: return "object with a corrupt or missing base (" + seg + ")";
    }
  }
  codec::Sha256 file_hash;
  for (const StoreSegment& s : m.segments) {
    try {
      objects.stream(
          s.key, s.size, m.name + ": " + store_segment_label(s),
          [&](std::span<const uint8_t> piece) { file_hash.update(piece); }, threads);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      return error_line(e);  // changed since it was checked
    }
  }
  if (file_hash.finish() != m.sha256) return std::string("restored bytes do not match the file's SHA-256");
  return std::nullopt;
}

}  // namespace

StoreVerifyReport Store::verify(bool repair, int threads) {
  fs::StoreLock lock(root_, repair ? fs::StoreLock::Mode::kExclusive : fs::StoreLock::Mode::kRead);
  StoreVerifyReport r;
  StoreObjects objects(root_);
  std::vector<layout::OddEntry> odd;
  std::vector<layout::PresentObject> present = layout::present_objects(objects.dir(), &odd);
  for (const auto& o : odd) r.problems.push_back(error_line(o.error));

  // tmp/ is where add writes and gc deletes: it must be a directory of this store.
  std::optional<Error> bad_temp;
  try {
    root_.open_dir(layout::kTempDir);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    bad_temp = e;
    r.problems.push_back(error_line(e));
  }

  ObjectChecker checker(objects, threads);
  for (const auto& o : present) {
    ++r.objects_checked;
    checker.check(o.key);
  }
  for (const auto& [key, e] : checker.bad()) r.problems.push_back(error_line(e));

  std::vector<Error> unreadable;
  std::vector<layout::ManifestFile> manifests = layout::read_manifests(root_, &unreadable);
  r.manifests_checked = manifests.size() + unreadable.size();
  for (const Error& e : unreadable) r.problems.push_back(error_line(e));
  io::DirFd mdir = layout::open_subdir(root_, layout::kManifestsDir);
  for (const auto& mf : manifests) {
    if (auto why = manifest_problem(mf.manifest, checker, objects, threads)) {
      r.problems.push_back("manifest of '" + mf.manifest.name + "': " + *why + " (" +
                           mdir.child_path(mf.file_name) + ")");
      r.unrestorable.push_back(mf.manifest.name);
    }
  }

  if (repair) {
    // Inside objects/ only, by descriptor: a planted link is removed as a name.
    std::set<std::string> dirty;
    for (const auto& o : odd) {
      std::optional<io::DirFd> shard;
      if (!o.shard.empty() && !(shard = objects.dir().open_dir(o.shard))) continue;
      const io::DirFd& where = shard ? *shard : objects.dir();
      if (where.remove_tree(o.name)) r.removed.push_back(where.child_path(o.name));
      dirty.insert(o.shard);
    }
    for (const auto& [key, e] : checker.bad()) {
      if (objects.remove(key)) r.removed.push_back(objects.path(key));
      dirty.insert(codec::sha256_hex(key).substr(0, 2));
    }
    objects.sync(dirty);
    if (bad_temp && root_.unlink(layout::kTempDir)) {
      r.removed.push_back(root_.child_path(layout::kTempDir));
      root_.make_dir(layout::kTempDir);
      root_.fsync();
    }
  }
  return r;
}

}  // namespace tk::store
