#include "tk/codec/store.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "tk/codec/store_files.h"
#include "tk/codec/store_manifest.h"
#include "tk/codec/store_layout.h"
#include "tk/codec/store_objects.h"
#include "tk/core/error.h"

namespace tk::codec {

namespace store_layout {

std::optional<StoreManifest> read_manifest(const std::string& dir, const std::string& name) {
  std::string path = manifest_path(dir, name);
  auto bytes = store_fs::read_file(path, kMaxManifestBytes);
  if (!bytes) return std::nullopt;
  StoreManifest m = store_manifest_parse(*bytes, "manifest of '" + name + "'");
  if (m.name != name) throw invalid_input("manifest names '" + m.name + "'", "manifest of '" + name + "'");
  return m;
}

std::vector<ManifestFile> read_manifests(const std::string& dir, bool skip_bad) {
  std::vector<ManifestFile> out;
  std::string mdir = manifests_dir(dir);
  for (const std::string& file : store_fs::list_dir(mdir)) {
    if (!store_is_manifest_file_name(file)) continue;
    try {
      auto bytes = store_fs::read_file(mdir + "/" + file, kMaxManifestBytes);
      if (!bytes) continue;  // removed meanwhile
      ManifestFile mf;
      mf.file_name = file;
      mf.bytes = bytes->size();
      mf.manifest = store_manifest_parse(*bytes, "manifests/" + file);
      out.push_back(std::move(mf));
    } catch (const Error& e) {
      if (!skip_bad || e.kind() != ErrorKind::kInvalidInput) throw;
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.manifest.name < b.manifest.name; });
  return out;
}

}  // namespace store_layout

namespace {

namespace fs = store_fs;
namespace layout = store_layout;

constexpr const char* kMarker = "{\"format\": \"tk-store\", \"version\": 1}\n";
constexpr const char* kMarkerName = "store.json";

// Entries a directory may hold before it becomes a store: those a concurrent creator
// makes (and its temporary marker).
bool store_entry(const std::string& name) {
  return name == "objects" || name == "manifests" || name == "tmp" || name == "lock" || name == kMarkerName ||
         name.starts_with(".store.json.");
}

// Keys of every object reachable from `manifests`: their segments' keys and, through
// object headers, the bases of BitX objects. Missing objects are counted, not followed.
std::set<Sha256Digest> reachable_objects(const StoreObjects& objects,
                                         const std::vector<layout::ManifestFile>& manifests, uint64_t* missing) {
  std::set<Sha256Digest> seen;
  std::vector<Sha256Digest> todo;
  for (const auto& mf : manifests)
    for (const auto& s : mf.manifest.segments)
      if (seen.insert(s.key).second) todo.push_back(s.key);
  while (!todo.empty()) {
    Sha256Digest k = todo.back();
    todo.pop_back();
    std::optional<StoreObjectHeader> h;
    try {
      h = objects.header(k);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
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

struct PresentObject {
  Sha256Digest key;
  std::string path;
  uint64_t bytes;
};

// Every object file present, by walking objects/<xx>/; files with other names are left out.
std::vector<PresentObject> present_objects(const std::string& dir) {
  std::vector<PresentObject> out;
  std::string odir = layout::objects_dir(dir);
  for (const std::string& shard : fs::list_dir(odir)) {
    std::string sdir = odir + "/" + shard;
    if (shard.size() != 2 || !fs::is_dir(sdir)) continue;
    for (const std::string& name : fs::list_dir(sdir)) {
      auto key = sha256_parse_hex(name);
      if (!key || name.substr(0, 2) != shard) continue;
      std::string p = sdir + "/" + name;
      auto size = fs::file_size(p);
      if (size) out.push_back({*key, p, *size});
    }
  }
  return out;
}

}  // namespace

Store Store::open(const std::string& dir, bool create) {
  if (dir.empty()) throw usage_error("no store directory given");
  std::string marker = dir + "/" + kMarkerName;
  if (!fs::is_dir(dir)) {
    if (!create) {
      if (fs::exists(dir)) throw invalid_input("not a model store (not a directory)", dir);
      throw errno_error("no such store", dir, ENOENT);
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec && !fs::is_dir(dir)) throw errno_error("failed to create store directory", dir, ec.value());
  }
  if (auto bytes = fs::read_file(marker, 4096)) {
    if (std::string(bytes->begin(), bytes->end()) != kMarker) throw invalid_input("not a model store (bad store.json)", dir);
  } else {
    if (!create) throw invalid_input("not a model store (no store.json)", dir);
    for (const std::string& name : fs::list_dir(dir))
      if (!store_entry(name)) throw usage_error("directory exists and is not a model store", dir);
    std::string m = kMarker;
    fs::publish_file(dir + "/.store.json." + fs::unique_name(), marker, {reinterpret_cast<const uint8_t*>(m.data()), m.size()});
  }
  if (create) {
    fs::make_dir(layout::objects_dir(dir));
    fs::make_dir(layout::manifests_dir(dir));
    fs::make_dir(layout::temp_dir(dir));
    fs::fsync_dir(dir);
  } else if (!fs::is_dir(layout::objects_dir(dir)) || !fs::is_dir(layout::manifests_dir(dir))) {
    throw invalid_input("not a model store (no objects/ or manifests/)", dir);
  }
  return Store(dir);
}

bool Store::contains(const std::string& name) const {
  store_check_name(name);
  return fs::exists(layout::manifest_path(dir_, name));
}

StoreGetResult Store::get(const std::string& name, io::OutputStream& out, int threads) const {
  store_check_name(name);
  fs::StoreLock lock(lock_path(), fs::StoreLock::Mode::kShared);
  auto manifest = layout::read_manifest(dir_, name);
  if (!manifest) throw invalid_input("no file named '" + name + "' in the store", dir_);
  StoreObjects objects(dir_);
  Sha256 file_hash;
  StoreGetResult r;
  for (const StoreSegment& s : manifest->segments) {
    std::string where = name + ": " +
                        (s.tensor.empty() ? (s.offset == 0 ? std::string("header") : "bytes at " + std::to_string(s.offset))
                                          : "tensor '" + s.tensor + "'");
    Buffer bytes = objects.load(s.key, s.size, where, threads);
    std::span<const uint8_t> span(bytes.data(), bytes.size());
    file_hash.update(span);
    out.write(span);
    r.bytes += s.size;
    if (!s.tensor.empty()) ++r.tensors;
  }
  Sha256Digest d = file_hash.finish();
  if (d != manifest->sha256) throw invalid_input("restored bytes do not match the file's SHA-256", name);
  r.sha256 = sha256_hex(d);
  return r;
}

void Store::remove(const std::string& name) {
  store_check_name(name);
  fs::StoreLock lock(lock_path(), fs::StoreLock::Mode::kExclusive);
  if (!fs::remove_file(layout::manifest_path(dir_, name)))
    throw invalid_input("no file named '" + name + "' in the store", dir_);
  fs::fsync_dir(layout::manifests_dir(dir_));
}

StoreGcReport Store::gc() {
  fs::StoreLock lock(lock_path(), fs::StoreLock::Mode::kExclusive);
  StoreGcReport r;
  // No add runs while the lock is held: whatever is in tmp/ was left by a killed one.
  std::string tdir = layout::temp_dir(dir_);
  for (const std::string& name : fs::list_dir(tdir)) {
    if (fs::remove_file(tdir + "/" + name)) ++r.temp_removed;
  }
  for (const std::string& name : fs::list_dir(dir_)) {
    if (name.starts_with(".store.json.") && fs::remove_file(dir_ + "/" + name)) ++r.temp_removed;
  }
  auto manifests = layout::read_manifests(dir_, false);
  StoreObjects objects(dir_);
  std::set<Sha256Digest> keep = reachable_objects(objects, manifests, nullptr);
  std::set<std::string> dirty;
  for (const PresentObject& o : present_objects(dir_)) {
    if (keep.count(o.key)) continue;
    if (fs::remove_file(o.path)) {
      ++r.objects_removed;
      r.bytes_freed += o.bytes;
      dirty.insert(objects.shard_dir(o.key));
    }
  }
  for (const std::string& d : dirty) fs::fsync_dir(d);
  if (r.temp_removed) fs::fsync_dir(tdir);
  return r;
}

StoreStats Store::stats() const {
  fs::StoreLock lock(lock_path(), fs::StoreLock::Mode::kShared);
  StoreStats st;
  auto manifests = layout::read_manifests(dir_, false);
  StoreObjects objects(dir_);
  std::map<Sha256Digest, uint64_t> sizes;  // of present objects
  for (const PresentObject& o : present_objects(dir_)) {
    sizes[o.key] = o.bytes;
    st.object_bytes += o.bytes;
    ++st.objects;
  }
  std::map<Sha256Digest, int> users;  // files referring to each object directly
  std::vector<std::set<Sha256Digest>> keys(manifests.size());
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
    f.sha256 = sha256_hex(m.sha256);
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
  std::set<Sha256Digest> reachable = reachable_objects(objects, manifests, &st.missing_objects);
  for (const auto& [k, bytes] : sizes) {
    if (reachable.count(k)) continue;
    ++st.unreferenced_objects;
    st.unreferenced_bytes += bytes;
  }
  return st;
}

}  // namespace tk::codec
