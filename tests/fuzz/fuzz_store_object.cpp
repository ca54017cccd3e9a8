// libFuzzer target for the objects of the model store (lib/tk/store/objects.cpp): the
// 48-byte header and lossless frame of each, and the BitX chains that link them. Each
// input is up to three objects, each but the last preceded by its u32 LE length; the
// frames' header checksums are repaired (fuzz_util.h). The first is stored under a fixed
// key and each next one under the base key its predecessor names, in a scratch store
// (a base may name an earlier object: a cycle). The first object is decoded unverified
// and, when that works, stored again under the SHA-256 of what it decoded to and
// streamed with the check of that digest, which must then pass with the same bytes.
// Objects claiming more than 16 MiB are not decoded. tk::Error of kind invalid input
// is the only way to refuse one.
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "fuzz_util.h"
#include "tk/store/objects.h"

namespace {

using tk::fuzz::check;
using tk::codec::Sha256Digest;

constexpr uint64_t kDecodeLimit = uint64_t{16} << 20;

// A store of nothing but objects/, for the life of the process.
class ScratchStore {
 public:
  ScratchStore() {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/tk-fuzz-store-XXXXXX";
    check(::mkdtemp(path.data()) != nullptr);
    path_ = path;
    check(::mkdir((path + "/objects").c_str(), 0755) == 0);
    root_ = tk::io::DirFd::open(path);
  }
  ~ScratchStore() { std::filesystem::remove_all(path_); }
  const tk::io::DirFd& root() const { return root_; }

 private:
  std::string path_;
  tk::io::DirFd root_;
};

std::vector<std::vector<uint8_t>> split_objects(const uint8_t* data, size_t size) {
  std::vector<std::vector<uint8_t>> objects;
  size_t at = 0;
  while (objects.size() < 3) {
    size_t n = size - at;
    if (objects.size() < 2 && n >= 4) {
      const uint32_t len = tk::fuzz::load_le<uint32_t>(data + at);
      if (len <= n - 4) at += 4, n = len;
    }
    objects.emplace_back(data + at, data + at + n);
    tk::fuzz::fix_lossless_frame(std::span<uint8_t>(objects.back()).subspan(std::min(n, tk::store::kStoreObjectHeaderBytes)));
    at += n;
    if (at == size) break;
  }
  return objects;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ScratchStore store;
  tk::store::StoreObjects objects(store.root());
  std::set<std::string> dirty;
  std::vector<Sha256Digest> keys;

  Sha256Digest key;
  key.fill(0xaa);
  uint64_t claimed = 0;
  for (const std::vector<uint8_t>& object : split_objects(data, size)) {
    objects.put(key, object, store.root(), dirty, true);
    keys.push_back(key);
    try {
      tk::store::StoreObjectHeader h = tk::store::store_object_parse_header(object, "fuzz");
      if (keys.size() == 1) claimed = h.decoded_size;
      if (h.kind != tk::store::StoreObjectKind::kBitx) break;
      key = h.base;
    } catch (const tk::Error& e) {
      tk::fuzz::expect_kind(e);
      break;
    }
  }

  if (claimed <= kDecodeLimit) {
    std::optional<tk::Buffer> bytes;
    try {
      bytes = objects.load_unverified(keys[0], claimed, "fuzz");
    } catch (const tk::Error& e) {
      tk::fuzz::expect_kind(e);
    }
    if (bytes) {
      check(bytes->size() == claimed);
      // The first object again, under the digest of its bytes: now it checks out.
      const Sha256Digest digest = tk::codec::sha256({bytes->data(), bytes->size()});
      objects.put(digest, split_objects(data, size)[0], store.root(), dirty, true);
      keys.push_back(digest);
      std::vector<uint8_t> streamed;
      objects.stream(
          digest, claimed, "fuzz",
          [&](std::span<const uint8_t> piece) { streamed.insert(streamed.end(), piece.begin(), piece.end()); }, 1);
      check(streamed.size() == claimed && (claimed == 0 || std::memcmp(streamed.data(), bytes->data(), claimed) == 0));
    }
  }
  for (const Sha256Digest& k : keys) objects.remove(k);
  return 0;
}
