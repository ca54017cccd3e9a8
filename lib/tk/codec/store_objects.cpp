#include "tk/codec/store_objects.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "tk/codec/store_files.h"
#include "tk/core/error.h"

namespace tk::codec {

namespace {

constexpr uint8_t kMagic[4] = {'T', 'K', 'S', 'O'};
constexpr uint8_t kVersion = 1;

void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::vector<uint8_t> with_header(const StoreObjectHeader& h, const std::vector<uint8_t>& frame) {
  std::vector<uint8_t> out(kStoreObjectHeaderBytes + frame.size(), 0);
  std::memcpy(out.data(), kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(h.kind);
  put_u64(out.data() + 8, h.decoded_size);
  std::memcpy(out.data() + 16, h.base.data(), h.base.size());
  if (!frame.empty()) std::memcpy(out.data() + kStoreObjectHeaderBytes, frame.data(), frame.size());
  return out;
}

// dst = a XOR b, in place when dst is a.
void xor_bytes(uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t n) {
#pragma omp parallel for schedule(static) if (n >= (size_t{1} << 22))
  for (size_t i = 0; i < n; ++i) dst[i] = a[i] ^ b[i];
}

std::string object_where(const Sha256Digest& key, const std::string& where) {
  std::string w = "object " + sha256_hex(key);
  return where.empty() ? w : where + ": " + w;
}

}  // namespace

std::vector<uint8_t> store_object_plain(DType dtype, std::span<const uint8_t> bytes, const LosslessOptions& options) {
  StoreObjectHeader h;
  h.kind = StoreObjectKind::kPlain;
  h.decoded_size = bytes.size();
  return with_header(h, lossless_compress(dtype, bytes, options));
}

std::vector<uint8_t> store_object_bitx(DType dtype, std::span<const uint8_t> bytes, std::span<const uint8_t> base_bytes,
                                       const Sha256Digest& base_key, const LosslessOptions& options) {
  if (bytes.size() != base_bytes.size()) throw internal_error("BitX base of a different length");
  Buffer delta = Buffer::allocate(bytes.size());
  xor_bytes(delta.mutable_data(), bytes.data(), base_bytes.data(), bytes.size());
  StoreObjectHeader h;
  h.kind = StoreObjectKind::kBitx;
  h.decoded_size = bytes.size();
  h.base = base_key;
  return with_header(h, lossless_compress(dtype, {delta.data(), delta.size()}, options));
}

StoreObjectHeader store_object_parse_header(std::span<const uint8_t> object, const std::string& where) {
  if (object.size() < kStoreObjectHeaderBytes || std::memcmp(object.data(), kMagic, 4) != 0)
    throw invalid_input("not a store object", where);
  if (object[4] != kVersion) throw invalid_input("unknown object version " + std::to_string(object[4]), where);
  StoreObjectHeader h;
  if (object[5] == static_cast<uint8_t>(StoreObjectKind::kPlain)) h.kind = StoreObjectKind::kPlain;
  else if (object[5] == static_cast<uint8_t>(StoreObjectKind::kBitx)) h.kind = StoreObjectKind::kBitx;
  else throw invalid_input("unknown object kind " + std::to_string(object[5]), where);
  h.decoded_size = get_u64(object.data() + 8);
  std::memcpy(h.base.data(), object.data() + 16, h.base.size());
  return h;
}

StoreObjects::StoreObjects(const io::DirFd& root) {
  auto d = root.open_dir("objects");
  if (!d) throw invalid_input("not a model store (no objects/)", root.path());
  objects_ = std::move(*d);
}

std::string StoreObjects::path(const Sha256Digest& key) const {
  std::string hex = sha256_hex(key);
  return objects_.child_path(hex.substr(0, 2) + "/" + hex);
}

std::optional<io::DirFd> StoreObjects::shard(const Sha256Digest& key) const {
  return objects_.open_dir(sha256_hex(key).substr(0, 2));
}

bool StoreObjects::contains(const Sha256Digest& key) const { return stored_size(key).has_value(); }

std::optional<uint64_t> StoreObjects::stored_size(const Sha256Digest& key) const {
  auto s = shard(key);
  if (!s) return std::nullopt;
  return s->file_size(sha256_hex(key));
}

std::optional<StoreObjectHeader> StoreObjects::header(const Sha256Digest& key) const {
  auto s = shard(key);
  if (!s) return std::nullopt;
  auto prefix = store_fs::read_prefix(*s, sha256_hex(key), kStoreObjectHeaderBytes);
  if (!prefix) return std::nullopt;
  return store_object_parse_header(*prefix, object_where(key, ""));
}

std::optional<int> StoreObjects::delta_depth(const Sha256Digest& key) const {
  Sha256Digest k = key;
  for (int depth = 0; depth <= kStoreMaxDeltaDepth; ++depth) {
    auto h = header(k);
    if (!h) return std::nullopt;
    if (h->kind == StoreObjectKind::kPlain) return depth;
    k = h->base;
  }
  return kStoreMaxDeltaDepth + 1;
}

uint64_t StoreObjects::put(const Sha256Digest& key, std::span<const uint8_t> object, const io::DirFd& temp_dir,
                           std::set<std::string>& dirty_shards, bool replace) {
  const std::string hex = sha256_hex(key);
  const std::string shard_name = hex.substr(0, 2);
  auto s = objects_.open_dir(shard_name);
  if (!s) {
    s = objects_.make_dir(shard_name);
    dirty_shards.insert("");
  }
  if (!replace && s->file_size(hex)) return 0;
  store_fs::publish_file(temp_dir, store_fs::unique_name(), *s, hex, object, false);
  dirty_shards.insert(shard_name);
  return object.size();
}

void StoreObjects::sync(const std::set<std::string>& dirty_shards) const {
  for (const std::string& name : dirty_shards) {
    if (name.empty()) {
      objects_.fsync();
    } else if (auto s = objects_.open_dir(name)) {
      s->fsync();
    }
  }
}

bool StoreObjects::remove(const Sha256Digest& key) const {
  auto s = shard(key);
  return s && s->remove_tree(sha256_hex(key));
}

Buffer StoreObjects::load(const Sha256Digest& key, uint64_t expected_size, const std::string& where,
                          int threads) const {
  // The bases of a BitX object are not hashed on the way: the result's SHA-256 covers
  // them. Only when it fails is the chain walked again with every link checked, to
  // name the object at fault.
  Buffer out = load_chain(key, expected_size, where, 0, false, threads);
  if (sha256({out.data(), out.size()}) == key) return out;
  load_chain(key, expected_size, where, 0, true, threads);
  throw invalid_input("corrupt object: SHA-256 mismatch", object_where(key, where));
}

Buffer StoreObjects::load_chain(const Sha256Digest& key, uint64_t expected_size, const std::string& where, int depth,
                                bool verify, int threads) const {
  std::string ow = object_where(key, where);
  auto s = shard(key);
  io::Fd fd = s ? s->open_file(sha256_hex(key), O_RDONLY) : io::Fd(-1, ENOENT);
  if (!fd.valid()) {
    if (fd.error() != ENOENT) throw errno_error("failed to open for reading", path(key), fd.error());
    throw invalid_input(depth == 0 ? "missing object" : "missing base object", ow);
  }
  Buffer file = Buffer::map_fd(fd.fd(), path(key));
  if (file.size() < kStoreObjectHeaderBytes) throw invalid_input("truncated object", ow);
  std::span<const uint8_t> bytes(file.data(), file.size());
  StoreObjectHeader h = store_object_parse_header(bytes, ow);
  if (h.decoded_size != expected_size)
    throw invalid_input("object decodes to " + std::to_string(h.decoded_size) + " bytes, expected " +
                            std::to_string(expected_size),
                        ow);
  std::span<const uint8_t> frame = bytes.subspan(kStoreObjectHeaderBytes);
  // The frame must decode to what the header says (and can, given its length: its
  // chunk table is in the file) before anything is allocated for it.
  try {
    if (lossless_decoded_size(frame) != expected_size) throw invalid_input("frame size differs from the header");
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    throw invalid_input("corrupt object: " + e.message(), ow);
  }
  Buffer out;
  if (h.kind == StoreObjectKind::kBitx) {
    if (depth >= kStoreMaxDeltaDepth) throw invalid_input("chain of BitX bases too long", ow);
    out = load_chain(h.base, expected_size, ow, depth + 1, verify, threads);
  } else {
    out = Buffer::allocate(expected_size);
  }
  try {
    if (h.kind == StoreObjectKind::kBitx) {
      Buffer delta = Buffer::allocate(expected_size);
      lossless_decompress(frame, {delta.mutable_data(), delta.size()}, threads);
      xor_bytes(out.mutable_data(), out.data(), delta.data(), expected_size);
    } else {
      lossless_decompress(frame, {out.mutable_data(), out.size()}, threads);
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    throw invalid_input(std::string("corrupt object: ") + e.message(), ow);
  }
  if (verify && sha256({out.data(), out.size()}) != key) throw invalid_input("corrupt object: SHA-256 mismatch", ow);
  return out;
}

}  // namespace tk::codec
