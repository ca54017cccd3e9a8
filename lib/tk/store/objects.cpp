#include "tk/store/objects.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tk/codec/bitx.h"
#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/store/files.h"

namespace tk::store {

namespace {

constexpr uint8_t kMagic[4] = {'T', 'K', 'S', 'O'};
constexpr uint8_t kVersion = 1;

std::vector<uint8_t> with_header(const StoreObjectHeader& h, const std::vector<uint8_t>& frame) {
  std::vector<uint8_t> out(kStoreObjectHeaderBytes + frame.size(), 0);
  std::memcpy(out.data(), kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(h.kind);
  store_le<uint64_t>(out.data() + 8, h.decoded_size);
  std::memcpy(out.data() + 16, h.base.data(), h.base.size());
  if (!frame.empty()) std::memcpy(out.data() + kStoreObjectHeaderBytes, frame.data(), frame.size());
  return out;
}

// dst = a XOR b, in place when dst is a (decoding a chain, on every thread for large
// tensors).
void xor_bytes(uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t n) {
#pragma omp parallel for schedule(static) if (n >= (size_t{1} << 22))
  for (size_t i = 0; i < n; ++i) dst[i] = a[i] ^ b[i];
}

std::string object_where(const codec::Sha256Digest& key, const std::string& where) {
  std::string w = "object " + codec::sha256_hex(key);
  return where.empty() ? w : where + ": " + w;
}

}  // namespace

std::vector<uint8_t> store_object_plain(DType dtype, std::span<const uint8_t> bytes, const codec::LosslessOptions& options) {
  StoreObjectHeader h;
  h.kind = StoreObjectKind::kPlain;
  h.decoded_size = bytes.size();
  return with_header(h, codec::lossless_compress(dtype, bytes, options));
}

std::vector<uint8_t> store_object_bitx(DType dtype, std::span<const uint8_t> bytes, std::span<const uint8_t> base_bytes,
                                       const codec::Sha256Digest& base_key, const codec::LosslessOptions& options) {
  if (bytes.size() != base_bytes.size()) throw internal_error("BitX base of a different length");
  StoreObjectHeader h;
  h.kind = StoreObjectKind::kBitx;
  h.decoded_size = bytes.size();
  h.base = base_key;
  return with_header(h, codec::bitx_encode(dtype, bytes, base_bytes, options));
}

StoreObjectHeader store_object_parse_header(std::span<const uint8_t> object, const std::string& where) {
  if (object.size() < kStoreObjectHeaderBytes || std::memcmp(object.data(), kMagic, 4) != 0)
    throw invalid_input("not a store object", where);
  if (object[4] != kVersion) throw invalid_input("unknown object version " + std::to_string(object[4]), where);
  StoreObjectHeader h;
  if (object[5] == static_cast<uint8_t>(StoreObjectKind::kPlain)) h.kind = StoreObjectKind::kPlain;
  else if (object[5] == static_cast<uint8_t>(StoreObjectKind::kBitx)) h.kind = StoreObjectKind::kBitx;
  else throw invalid_input("unknown object kind " + std::to_string(object[5]), where);
  h.decoded_size = load_le<uint64_t>(object.data() + 8);
  std::memcpy(h.base.data(), object.data() + 16, h.base.size());
  return h;
}

StoreObjects::StoreObjects(const io::DirFd& root) {
  auto d = root.open_dir("objects");
  if (!d) throw invalid_input("not a model store (no objects/)", root.path());
  objects_ = std::move(*d);
}

std::string StoreObjects::path(const codec::Sha256Digest& key) const {
  std::string hex = codec::sha256_hex(key);
  return objects_.child_path(hex.substr(0, 2) + "/" + hex);
}

std::optional<io::DirFd> StoreObjects::shard(const codec::Sha256Digest& key) const {
  return objects_.open_dir(codec::sha256_hex(key).substr(0, 2));
}

bool StoreObjects::contains(const codec::Sha256Digest& key) const { return stored_size(key).has_value(); }

std::optional<uint64_t> StoreObjects::stored_size(const codec::Sha256Digest& key) const {
  auto s = shard(key);
  if (!s) return std::nullopt;
  return s->file_size(codec::sha256_hex(key));
}

std::optional<StoreObjectHeader> StoreObjects::header(const codec::Sha256Digest& key) const {
  auto s = shard(key);
  if (!s) return std::nullopt;
  auto prefix = files::read_prefix(*s, codec::sha256_hex(key), kStoreObjectHeaderBytes);
  if (!prefix) return std::nullopt;
  return store_object_parse_header(*prefix, object_where(key, ""));
}

std::optional<int> StoreObjects::delta_depth(const codec::Sha256Digest& key) const {
  codec::Sha256Digest k = key;
  for (int depth = 0; depth <= kStoreMaxDeltaDepth; ++depth) {
    auto h = header(k);
    if (!h) return std::nullopt;
    if (h->kind == StoreObjectKind::kPlain) return depth;
    k = h->base;
  }
  return kStoreMaxDeltaDepth + 1;
}

uint64_t StoreObjects::put(const codec::Sha256Digest& key, std::span<const uint8_t> object, const io::DirFd& temp_dir,
                           std::set<std::string>& dirty_shards, bool replace) {
  const std::string hex = codec::sha256_hex(key);
  const std::string shard_name = hex.substr(0, 2);
  auto s = objects_.open_dir(shard_name);
  if (!s) {
    s = objects_.make_dir(shard_name);
    dirty_shards.insert("");
  }
  if (!replace && s->file_size(hex)) return 0;
  files::publish_file(temp_dir, files::unique_name(), *s, hex, object, false);
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

bool StoreObjects::remove(const codec::Sha256Digest& key) const {
  auto s = shard(key);
  return s && s->remove_tree(codec::sha256_hex(key));
}

// A link of a BitX chain: the object's mapped file and its frame. The chain runs from
// the object asked for to the plain object at its end.
struct StoreObjects::Link {
  codec::Sha256Digest key;
  std::string where;
  Buffer file;
  codec::LosslessFrame frame;
};

std::vector<StoreObjects::Link> StoreObjects::open_chain(const codec::Sha256Digest& key, uint64_t expected_size,
                                                         const std::string& where) const {
  std::vector<Link> chain;
  for (codec::Sha256Digest k = key;;) {
    const int depth = static_cast<int>(chain.size());
    std::string ow = object_where(k, chain.empty() ? where : chain.back().where);
    auto s = shard(k);
    io::Fd fd = s ? s->open_file(codec::sha256_hex(k), O_RDONLY) : io::Fd(-1, ENOENT);
    if (!fd.valid()) {
      if (fd.error() != ENOENT) throw errno_error("failed to open for reading", path(k), fd.error());
      throw invalid_input(depth == 0 ? "missing object" : "missing base object", ow);
    }
    Buffer file = Buffer::map_fd(fd.fd(), path(k));
    if (file.size() < kStoreObjectHeaderBytes) throw invalid_input("truncated object", ow);
    std::span<const uint8_t> bytes(file.data(), file.size());
    StoreObjectHeader h = store_object_parse_header(bytes, ow);
    if (h.decoded_size != expected_size)
      throw invalid_input("object decodes to " + std::to_string(h.decoded_size) + " bytes, expected " +
                              std::to_string(expected_size),
                          ow);
    // The frame must decode to what the header says (and can, given its length: its
    // chunk table is in the file); it is decoded a piece at a time, never whole.
    std::optional<codec::LosslessFrame> frame;
    try {
      frame.emplace(bytes.subspan(kStoreObjectHeaderBytes));
      if (frame->size() != expected_size) throw invalid_input("frame size differs from the header");
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      throw invalid_input("corrupt object: " + e.message(), ow);
    }
    chain.push_back({k, std::move(ow), std::move(file), std::move(*frame)});
    if (h.kind == StoreObjectKind::kPlain) return chain;
    if (depth + 1 > kStoreMaxDeltaDepth) throw invalid_input("chain of BitX bases too long", chain.back().where);
    k = h.base;
  }
}

// Bytes [offset, offset + out.size()) of the chain's first object: the plain object's
// bytes XOR every delta's. With `hashes` (one per link), each link's bytes so far are
// hashed on the way.
void StoreObjects::read_chain(const std::vector<Link>& chain, uint64_t offset, std::span<uint8_t> out,
                              std::vector<codec::Sha256>* hashes, int threads) const {
  const auto read = [&](const Link& link, std::span<uint8_t> dst) {
    try {
      link.frame.read(offset, dst, threads);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      throw invalid_input("corrupt object: " + e.message(), link.where);
    }
  };
  read(chain.back(), out);
  if (hashes) hashes->back().update(out);
  std::vector<uint8_t> delta;
  for (size_t i = chain.size() - 1; i-- > 0;) {
    delta.resize(out.size());
    read(chain[i], delta);
    xor_bytes(out.data(), out.data(), delta.data(), out.size());
    if (hashes) (*hashes)[i].update(out);
  }
}

void StoreObjects::stream(const codec::Sha256Digest& key, uint64_t expected_size, const std::string& where,
                          const ObjectSink& sink, int threads) const {
  stream_chain(open_chain(key, expected_size, where), expected_size, sink, threads);
}

void StoreObjects::stream_chain(const std::vector<Link>& chain, uint64_t expected_size, const ObjectSink& sink,
                                int threads) const {
  const codec::Sha256Digest& key = chain.front().key;
  // Pieces of whole chunks of the plain object, about kPieceBytes each and at least the
  // largest chunk of the chain, so that no chunk of a link is decoded more than twice.
  constexpr uint64_t kPieceBytes = 16 << 20;
  uint64_t largest = 0;
  for (const Link& link : chain) largest = std::max<uint64_t>(largest, link.frame.chunk_bytes());
  const uint64_t chunk = chain.back().frame.chunk_bytes();
  const uint64_t piece = std::max<uint64_t>(1, std::max(kPieceBytes, largest) / chunk) * chunk;
  std::vector<uint8_t> bytes;
  codec::Sha256 hash;
  for (uint64_t at = 0; at < expected_size; at += piece) {
    bytes.resize(std::min(piece, expected_size - at));
    read_chain(chain, at, bytes, nullptr, threads);
    hash.update(bytes);
    sink(bytes);
  }
  if (hash.finish() == key) return;
  // The bases are not hashed on the way: the result's SHA-256 covers them. Only when it
  // fails is the chain read again with every link hashed, to name the object at fault.
  std::vector<codec::Sha256> hashes(chain.size());
  for (uint64_t at = 0; at < expected_size; at += piece) {
    bytes.resize(std::min(piece, expected_size - at));
    read_chain(chain, at, bytes, &hashes, threads);
  }
  for (size_t i = chain.size(); i-- > 0;)
    if (hashes[i].finish() != chain[i].key) throw invalid_input("corrupt object: SHA-256 mismatch", chain[i].where);
  throw invalid_input("corrupt object: SHA-256 mismatch", chain.front().where);
}

Buffer StoreObjects::load(const codec::Sha256Digest& key, uint64_t expected_size, const std::string& where,
                          int threads) const {
  const std::vector<Link> chain = open_chain(key, expected_size, where);  // claims checked first
  Buffer out = Buffer::allocate(expected_size);
  uint64_t at = 0;
  stream_chain(
      chain, expected_size,
      [&](std::span<const uint8_t> piece) {
        std::memcpy(out.mutable_data() + at, piece.data(), piece.size());
        at += piece.size();
      },
      threads);
  return out;
}

Buffer StoreObjects::load_unverified(const codec::Sha256Digest& key, uint64_t expected_size, const std::string& where,
                                     int threads) const {
  const std::vector<Link> chain = open_chain(key, expected_size, where);
  Buffer out = Buffer::allocate(expected_size);
  read_chain(chain, 0, {out.mutable_data(), out.size()}, nullptr, threads);
  return out;
}

}  // namespace tk::store
