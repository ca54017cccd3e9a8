#include "tk/store/store.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "tk/core/error.h"
#include "tk/store/files.h"
#include "tk/store/layout.h"
#include "tk/store/manifest.h"
#include "tk/store/objects.h"

namespace tk::store {

namespace layout {

io::DirFd open_subdir(const io::DirFd& root, const char* name) {
  auto d = root.open_dir(name);
  if (!d) throw invalid_input(std::string("not a model store (no ") + name + "/)", root.path());
  return std::move(*d);
}

std::optional<StoreManifest> read_manifest(const io::DirFd& root, const std::string& name) {
  io::DirFd mdir = open_subdir(root, kManifestsDir);
  auto bytes = files::read_file(mdir, store_manifest_file_name(name), kMaxManifestBytes);
  if (!bytes) return std::nullopt;
  StoreManifest m = store_manifest_parse(*bytes, "manifest of '" + name + "'");
  if (m.name != name) throw invalid_input("manifest names '" + m.name + "'", "manifest of '" + name + "'");
  return m;
}

std::vector<ManifestFile> read_manifests(const io::DirFd& root, std::vector<Error>* bad) {
  std::vector<ManifestFile> out;
  io::DirFd mdir = open_subdir(root, kManifestsDir);
  for (const std::string& file : mdir.list()) {
    if (!store_is_manifest_file_name(file)) continue;
    try {
      auto bytes = files::read_file(mdir, file, kMaxManifestBytes);
      if (!bytes) continue;  // removed meanwhile
      ManifestFile mf;
      mf.file_name = file;
      mf.bytes = bytes->size();
      mf.manifest = store_manifest_parse(*bytes, "manifests/" + file);
      out.push_back(std::move(mf));
    } catch (const Error& e) {
      if (!bad || e.kind() != ErrorKind::kInvalidInput) throw;
      bad->push_back(e);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.manifest.name < b.manifest.name; });
  return out;
}

namespace {

bool lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

}  // namespace

std::vector<PresentObject> present_objects(const io::DirFd& objects, std::vector<OddEntry>* odd) {
  std::vector<PresentObject> out;
  auto refuse = [&](const std::string& shard, const std::string& name, const Error& e) {
    if (!odd) throw e;
    odd->push_back({shard, name, e});
  };
  for (const std::string& shard : objects.list()) {
    if (shard.size() != 2 || !lower_hex(shard[0]) || !lower_hex(shard[1])) continue;
    std::optional<io::DirFd> sdir;
    try {
      sdir = objects.open_dir(shard);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      refuse("", shard, e);
      continue;
    }
    if (!sdir) continue;  // removed meanwhile
    for (const std::string& name : sdir->list()) {
      auto key = sha256_parse_hex(name);
      if (!key || name.substr(0, 2) != shard) continue;
      try {
        if (auto size = sdir->file_size(name)) out.push_back({*key, *size});
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kInvalidInput) throw;
        refuse(shard, name, e);
      }
    }
  }
  return out;
}

}  // namespace layout

namespace {

namespace fs = files;

constexpr const char* kMarker = "{\"format\": \"tk-store\", \"version\": 1}\n";
constexpr const char* kMarkerName = "store.json";
constexpr const char* kMarkerPrefix = ".store.json.";  // its temporaries

// Entries a directory may hold before it becomes a store: those a concurrent creator
// makes (and its temporary marker).
bool store_entry(const std::string& name) {
  return name == "objects" || name == "manifests" || name == "tmp" || name == "lock" || name == kMarkerName ||
         name.starts_with(kMarkerPrefix);
}

// Keys of every object reachable from `manifests`: their segments' keys and, through
// object headers, the bases of BitX objects. Missing objects are counted, not followed.
std::set<codec::Sha256Digest> reachable_objects(const StoreObjects& objects,
                                         const std::vector<layout::ManifestFile>& manifests, uint64_t* missing,
                                         uint64_t* bad) {
  std::set<codec::Sha256Digest> seen;
  std::vector<codec::Sha256Digest> todo;
  for (const auto& mf : manifests)
    for (const auto& s : mf.manifest.segments)
      if (seen.insert(s.key).second) todo.push_back(s.key);
  while (!todo.empty()) {
    codec::Sha256Digest k = todo.back();
    todo.pop_back();
    std::optional<StoreObjectHeader> h;
    try {
      h = objects.header(k);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      if (bad) ++*bad;
      continue;  // a damaged object: kept, its base (if any) unknown
    }
    if (!h) {
      if (missing) ++*missing;
      continue;
    }
    if (h->kind == StoreObjectKind::kBitx && seen.insert(h->base).second) todo.push_back(h->base);
  }
  return seen;
}

}  // namespace

bool is_store_dir(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) &&
         std::filesystem::is_regular_file(std::filesystem::path(dir) / kMarkerName, ec);
}

Store Store::open(const std::string& dir, bool create) {
  if (dir.empty()) throw usage_error("no store directory given");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (!create) {
      if (std::filesystem::exists(dir, ec)) throw invalid_input("not a model store (not a directory)", dir);
      throw errno_error("no such store", dir, ENOENT);
    }
    std::filesystem::create_directories(dir, ec);
    if (ec && !std::filesystem::is_directory(dir)) throw errno_error("failed to create store directory", dir, ec.value());
  }
  io::DirFd root = io::DirFd::open(dir);
  if (auto bytes = fs::read_file(root, kMarkerName, 4096)) {
    if (std::string(bytes->begin(), bytes->end()) != kMarker) throw invalid_input("not a model store (bad store.json)", dir);
  } else {
    if (!create) throw invalid_input("not a model store (no store.json)", dir);
    for (const std::string& name : root.list())
      if (!store_entry(name)) throw usage_error("directory exists and is not a model store", dir);
    std::string m = kMarker;
    fs::publish_file(root, std::string(kMarkerPrefix) + fs::unique_name(), root, kMarkerName,
                     {reinterpret_cast<const uint8_t*>(m.data()), m.size()});
  }
  if (create) {
    root.make_dir(layout::kObjectsDir);
    root.make_dir(layout::kManifestsDir);
    root.make_dir(layout::kTempDir);
    root.fsync();
  } else {
    layout::open_subdir(root, layout::kObjectsDir);
    layout::open_subdir(root, layout::kManifestsDir);
  }
  return Store(dir, std::move(root));
}

bool Store::contains(const std::string& name) const {
  store_check_name(name);
  return layout::open_subdir(root_, layout::kManifestsDir).type(store_manifest_file_name(name)).has_value();
}

StoreGetResult Store::get(const std::string& name, io::OutputStream& out, int threads) const {
  store_check_name(name);
  fs::StoreLock lock(root_, fs::StoreLock::Mode::kRead);
  auto manifest = layout::read_manifest(root_, name);
  if (!manifest) throw invalid_input("no file named '" + name + "' in the store", dir_);
  StoreObjects objects(root_);
  codec::Sha256 file_hash;
  StoreGetResult r;
  for (const StoreSegment& s : manifest->segments) {
    objects.stream(
        s.key, s.size, name + ": " + store_segment_label(s),
        [&](std::span<const uint8_t> piece) {
          file_hash.update(piece);
          out.write(piece);
        },
        threads);
    r.bytes += s.size;
    if (!s.tensor.empty()) ++r.tensors;
  }
  codec::Sha256Digest d = file_hash.finish();
  if (d != manifest->sha256) throw invalid_input("restored bytes do not match the file's SHA-256", name);
  r.sha256 = codec::sha256_hex(d);
  return r;
}

void Store::remove(const std::string& name) {
  store_check_name(name);
  fs::StoreLock lock(root_, fs::StoreLock::Mode::kExclusive);
  io::DirFd mdir = layout::open_subdir(root_, layout::kManifestsDir);
  if (!mdir.unlink(store_manifest_file_name(name))) throw invalid_input("no file named '" + name + "' in the store", dir_);
  mdir.fsync();
}

StoreGcReport Store::gc() {
  fs::StoreLock lock(root_, fs::StoreLock::Mode::kExclusive);
  StoreGcReport r;
  // Everything is checked before anything is removed: an entry that is not what the
  // layout says stops gc (kInvalidInput) rather than be walked into.
  io::DirFd tdir = layout::open_subdir(root_, layout::kTempDir);
  auto manifests = layout::read_manifests(root_);
  StoreObjects objects(root_);
  std::vector<layout::PresentObject> present = layout::present_objects(objects.dir());
  std::vector<std::string> temps = tdir.list();
  for (const std::string& name : temps)
    if (tdir.type(name) == io::EntryType::kDirectory)
      throw invalid_input("expected a temporary file, found a directory", tdir.child_path(name));
  // No add runs while the lock is held: whatever is in tmp/ was left by a killed one.
  // unlinkat removes a planted symbolic link itself, never what it points at.
  for (const std::string& name : temps)
    if (tdir.unlink(name)) ++r.temp_removed;
  for (const std::string& name : root_.list())
    if (name.starts_with(kMarkerPrefix) && root_.type(name) != io::EntryType::kDirectory && root_.unlink(name))
      ++r.temp_removed;
  std::set<codec::Sha256Digest> keep = reachable_objects(objects, manifests, nullptr, nullptr);
  std::set<std::string> dirty;
  for (const layout::PresentObject& o : present) {
    if (keep.count(o.key)) continue;
    if (objects.remove(o.key)) {
      ++r.objects_removed;
      r.bytes_freed += o.bytes;
      dirty.insert(codec::sha256_hex(o.key).substr(0, 2));
    }
  }
  objects.sync(dirty);
  if (r.temp_removed) tdir.fsync();
  return r;
}

StoreStats Store::stats() const {
  fs::StoreLock lock(root_, fs::StoreLock::Mode::kRead);
  StoreStats st;
  auto manifests = layout::read_manifests(root_);
  StoreObjects objects(root_);
  std::map<codec::Sha256Digest, uint64_t> sizes;  // of present objects
  for (const layout::PresentObject& o : layout::present_objects(objects.dir())) {
    sizes[o.key] = o.bytes;
    st.object_bytes += o.bytes;
    ++st.objects;
  }
  std::map<codec::Sha256Digest, int> users;  // files referring to each object directly
  std::vector<std::set<codec::Sha256Digest>> keys(manifests.size());
  for (size_t i = 0; i < manifests.size(); ++i) {
    for (const auto& s : manifests[i].manifest.segments) keys[i].insert(s.key);
    for (const auto& k : keys[i]) ++users[k];
  }
  for (size_t i = 0; i < manifests.size(); ++i) {
    const StoreManifest& m = manifests[i].manifest;
    StoreFileInfo f;
    f.name = m.name;
    f.kind = m.kind;
    f.base = m.base;
    f.created = m.created;
    f.sha256 = codec::sha256_hex(m.sha256);
    f.logical_bytes = m.size;
    f.manifest_bytes = manifests[i].bytes;
    for (const auto& s : m.segments)
      if (!s.tensor.empty()) ++f.tensors;
    f.objects = keys[i].size();
    for (const auto& k : keys[i]) {
      auto it = sizes.find(k);
      if (it == sizes.end()) continue;
      f.stored_bytes += it->second;
      if (users[k] == 1) f.unique_bytes += it->second;
    }
    st.logical_bytes += m.size;
    st.manifest_bytes += manifests[i].bytes;
    st.files.push_back(std::move(f));
  }
  std::set<codec::Sha256Digest> reachable = reachable_objects(objects, manifests, &st.missing_objects, &st.bad_objects);
  for (const auto& [k, bytes] : sizes) {
    if (reachable.count(k)) continue;
    ++st.unreferenced_objects;
    st.unreferenced_bytes += bytes;
  }
  return st;
}

}  // namespace tk::store
