// Store::add: split a file into segments, key them, choose a base for BitX objects,
// write the new objects and publish the manifest.
#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <set>

#include "tk/core/clock.h"
#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/safetensors.h"
#include "tk/store/files.h"
#include "tk/store/layout.h"
#include "tk/store/objects.h"
#include "tk/store/store.h"

namespace tk::store {

namespace {

namespace fs = files;

// A BitX object is kept only when it beats this share of the raw bytes; otherwise the
// plain object is tried too and the smaller kept (a bad pairing costs one more coding).
constexpr double kDeltaTryPlain = 0.75;
// Automatic choice: a base is used when at least this share of the sampled bits of
// matching tensors agree. Unrelated bf16 weights of one distribution agree on about
// 0.65 (sign and low mantissa bits are coin flips); fine-tunes on 0.8 and more.
constexpr double kMinSimilarity = 0.75;
constexpr size_t kSampleTensors = 8;
constexpr uint64_t kSampleMaxTensorBytes = uint64_t{64} << 20;
constexpr size_t kSampleWindows = 64, kSampleWindowBytes = 4096;
constexpr size_t kMaxCandidates = 4;

struct Segment {
  StoreSegment s;
  DType dtype = DType::kU8;
};

// Segments of a safetensors file (header, tensors, any other bytes), or nullopt when
// `data` is not a valid safetensors file (it is then stored as one opaque object).
std::optional<std::vector<Segment>> safetensors_segments(std::span<const uint8_t> data) {
  if (data.size() < 10) return std::nullopt;
  uint64_t n = load_le<uint64_t>(data.data());
  if (n > io::kSafetensorsMaxHeader || n > data.size() - 8 || data[8] != '{') return std::nullopt;
  io::SafetensorsHeader header;
  try {
    header = io::safetensors_parse_header(data.subspan(8, n));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    return std::nullopt;
  }
  uint64_t base = 8 + n;
  if (header.data_size > data.size() - base) return std::nullopt;
  std::vector<Segment> out;
  Segment h;
  h.s.offset = 0;
  h.s.size = base;
  out.push_back(h);
  uint64_t cursor = base;
  for (size_t i = 0; i < header.tensors.size(); ++i) {
    const io::TensorInfo& t = header.tensors[i];
    uint64_t begin = base + header.offsets[i];
    if (begin < cursor) return std::nullopt;  // overlapping tensors: keep the bytes as they are
    if (begin > cursor) {
      Segment gap;
      gap.s.offset = cursor;
      gap.s.size = begin - cursor;
      out.push_back(gap);
    }
    Segment s;
    s.s.offset = begin;
    s.s.size = t.nbytes;
    s.s.tensor = t.name;
    s.s.dtype = dtype_name(t.dtype);
    s.s.shape.assign(t.shape.begin(), t.shape.end());
    s.dtype = t.dtype;
    out.push_back(std::move(s));
    cursor = begin + t.nbytes;
  }
  if (cursor < data.size()) {
    Segment tail;
    tail.s.offset = cursor;
    tail.s.size = data.size() - cursor;
    out.push_back(tail);
  }
  return out;
}

// Hash every segment (in parallel) and the whole file.
codec::Sha256Digest hash_segments(std::span<const uint8_t> data, std::vector<Segment>& segments) {
  codec::Sha256Digest file{};
  const auto count = static_cast<int64_t>(segments.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = -1; i < count; ++i) {
    if (i < 0) {
      file = codec::sha256(data);
    } else {
      auto& s = segments[static_cast<size_t>(i)].s;
      s.key = codec::sha256(data.subspan(s.offset, s.size));
    }
  }
  return file;
}

bool same_layout(const StoreSegment& a, const StoreSegment& b) {
  return a.tensor == b.tensor && a.dtype == b.dtype && a.shape == b.shape && a.size == b.size;
}

// The base's tensor segments by name.
std::map<std::string, const StoreSegment*> tensors_by_name(const StoreManifest& m) {
  std::map<std::string, const StoreSegment*> out;
  for (const auto& s : m.segments)
    if (!s.tensor.empty()) out.emplace(s.tensor, &s);
  return out;
}

// Fraction of equal bits between `a` and `b` over windows spread across them.
void count_equal_bits(std::span<const uint8_t> a, std::span<const uint8_t> b, uint64_t& equal, uint64_t& total) {
  size_t n = a.size();
  size_t windows = n <= kSampleWindows * kSampleWindowBytes ? 1 : kSampleWindows;
  size_t wbytes = windows == 1 ? n : kSampleWindowBytes;
  for (size_t w = 0; w < windows; ++w) {
    size_t begin = windows == 1 ? 0 : (n - wbytes) * w / (windows - 1);
    size_t i = 0;
    for (; i + 8 <= wbytes; i += 8) {
      uint64_t x, y;
      std::memcpy(&x, a.data() + begin + i, 8);
      std::memcpy(&y, b.data() + begin + i, 8);
      equal += 64 - static_cast<uint64_t>(std::popcount(x ^ y));
    }
    for (; i < wbytes; ++i) equal += 8 - static_cast<uint64_t>(std::popcount(static_cast<unsigned>(a[begin + i] ^ b[begin + i])));
    total += 8 * wbytes;
  }
}

struct BaseChoice {
  const StoreManifest* manifest = nullptr;
  double similarity = 0;
};

// Similarity of the file's tensors to those of `base` with the same name, dtype and
// shape: the fraction of equal bits in a sample of up to kSampleTensors tensors.
// nullopt when no tensor matches or the sample cannot be read.
std::optional<double> similarity(const StoreObjects& objects, std::span<const uint8_t> data,
                                 const std::vector<Segment>& segments, const StoreManifest& base) {
  auto by_name = tensors_by_name(base);
  std::vector<std::pair<const StoreSegment*, const StoreSegment*>> matched;  // (new, base)
  for (const auto& seg : segments) {
    if (seg.s.tensor.empty() || seg.s.size == 0) continue;
    auto it = by_name.find(seg.s.tensor);
    if (it != by_name.end() && same_layout(seg.s, *it->second)) matched.emplace_back(&seg.s, it->second);
  }
  if (matched.empty()) return std::nullopt;
  std::vector<size_t> eligible;
  for (size_t i = 0; i < matched.size(); ++i)
    if (matched[i].first->size <= kSampleMaxTensorBytes) eligible.push_back(i);
  if (eligible.empty()) {
    auto smallest = std::min_element(matched.begin(), matched.end(),
                                     [](const auto& x, const auto& y) { return x.first->size < y.first->size; });
    eligible.push_back(static_cast<size_t>(smallest - matched.begin()));
  }
  size_t picks = std::min(kSampleTensors, eligible.size());
  uint64_t equal = 0, total = 0;
  for (size_t p = 0; p < picks; ++p) {
    auto [mine, theirs] = matched[eligible[p * eligible.size() / picks]];
    std::span<const uint8_t> a = data.subspan(mine->offset, mine->size);
    if (mine->key == theirs->key) {
      count_equal_bits(a, a, equal, total);
      continue;
    }
    try {
      Buffer b = objects.load_unverified(theirs->key, theirs->size, base.name);
      count_equal_bits(a, {b.data(), b.size()}, equal, total);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      return std::nullopt;  // a damaged base is no base
    }
  }
  if (total == 0) return std::nullopt;
  return static_cast<double>(equal) / static_cast<double>(total);
}

// Matched tensor bytes, for ranking candidates before sampling them.
uint64_t matched_bytes(const std::vector<Segment>& segments, const StoreManifest& base) {
  auto by_name = tensors_by_name(base);
  uint64_t bytes = 0;
  for (const auto& seg : segments) {
    if (seg.s.tensor.empty()) continue;
    auto it = by_name.find(seg.s.tensor);
    if (it != by_name.end() && same_layout(seg.s, *it->second)) bytes += seg.s.size;
  }
  return bytes;
}

BaseChoice choose_base(const StoreObjects& objects, std::span<const uint8_t> data, const std::vector<Segment>& segments,
                       const std::vector<layout::ManifestFile>& manifests) {
  std::vector<std::pair<uint64_t, const StoreManifest*>> ranked;
  for (const auto& mf : manifests) {
    if (mf.manifest.kind != "safetensors") continue;
    uint64_t bytes = matched_bytes(segments, mf.manifest);
    if (bytes > 0) ranked.emplace_back(bytes, &mf.manifest);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.size() > kMaxCandidates) ranked.resize(kMaxCandidates);
  BaseChoice best;
  double best_score = 0;
  for (const auto& [bytes, m] : ranked) {
    auto sim = similarity(objects, data, segments, *m);
    if (!sim || *sim < kMinSimilarity) continue;
    double score = *sim * static_cast<double>(bytes);
    if (score > best_score) {
      best_score = score;
      best = {m, *sim};
    }
  }
  return best;
}

std::string display_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The same file added again is a re-add; a different one under a stored name must be
// asked for (`replace`). A manifest that cannot be parsed is replaced (verify reports it).
void check_name_free(const io::DirFd& root, const std::string& name, const codec::Sha256Digest& file_key,
                     bool replace) {
  if (replace) return;
  std::optional<StoreManifest> old;
  try {
    old = layout::read_manifest(root, name);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
  }
  if (old && old->sha256 != file_key)
    throw usage_error("a different file is stored under this name", name).with_option("store.replace");
}

Buffer read_input(io::InputStream& in) {
  if (in.is_regular_file() && in.position() == 0) return Buffer::map_file(in.path());
  return in.read_all();
}

// Refuse a name the store cannot take, before the input is read. An empty one is a
// stream's: it has no file name to store it under (the tools' one stream is stdin).
void check_add_name(const std::string& name) {
  if (name.empty())
    throw usage_error("a file read from standard input needs a name in the store").with_option("store.name");
  store_check_name(name);
}

}  // namespace

StoreAddResult Store::add(const std::string& path, const StoreAddOptions& options) {
  StoreAddOptions named = options;
  if (named.name.empty()) named.name = display_name(path);
  check_add_name(named.name);
  return add(io::InputStream::open(path), named);
}

StoreAddResult Store::add(std::unique_ptr<io::InputStream> in, const StoreAddOptions& options) {
  StoreAddResult r;
  r.name = options.name;
  check_add_name(r.name);
  Buffer input = read_input(*in);
  in.reset();
  std::span<const uint8_t> data(input.data(), input.size());
  r.logical_bytes = data.size();

  auto parsed = safetensors_segments(data);
  r.safetensors = parsed.has_value();
  std::vector<Segment> segments;
  if (parsed) {
    segments = std::move(*parsed);
  } else {
    Segment whole;
    whole.s.size = data.size();
    segments.push_back(whole);
  }
  codec::Sha256Digest file_key = hash_segments(data, segments);

  fs::StoreLock lock(root_, fs::StoreLock::Mode::kShared);
  StoreObjects objects(root_);
  io::DirFd tdir = layout::open_subdir(root_, layout::kTempDir);
  io::DirFd mdir = layout::open_subdir(root_, layout::kManifestsDir);
  const int threads = options.lossless.threads;

  // Checked here so that a refused add costs no object writes, and again under the
  // name lock at the publish, where it decides.
  check_name_free(root_, r.name, file_key, options.replace);

  // An object already stored is trusted only once it decodes to its key: a corrupt one
  // is written again (and reported) rather than deduplicated against.
  std::set<codec::Sha256Digest> stored, corrupt;
  for (const Segment& seg : segments) {
    const StoreSegment& s = seg.s;
    if (stored.count(s.key) || corrupt.count(s.key) || !objects.contains(s.key)) continue;
    try {
      objects.stream(s.key, s.size, r.name + ": " + store_segment_label(s), [](std::span<const uint8_t>) {}, threads);
      stored.insert(s.key);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      corrupt.insert(s.key);
      r.replaced_objects.push_back(e.message() + " (" + e.where() + ")");
    }
  }

  std::vector<layout::ManifestFile> manifests;
  BaseChoice base;
  bool need_new = std::any_of(segments.begin(), segments.end(),
                              [&](const Segment& s) { return !s.s.tensor.empty() && !stored.count(s.s.key); });
  if (r.safetensors && options.deltas && need_new) {
    std::vector<Error> unreadable;  // a manifest that cannot be read is no candidate
    manifests = layout::read_manifests(root_, &unreadable);
    if (!options.base.empty()) {
      store_check_name(options.base);
      for (const auto& mf : manifests)
        if (mf.manifest.name == options.base) base.manifest = &mf.manifest;
      if (!base.manifest) throw invalid_input("no file named '" + options.base + "' in the store", dir_);
      base.similarity = similarity(objects, data, segments, *base.manifest).value_or(0);
    } else {
      base = choose_base(objects, data, segments, manifests);
    }
  }
  std::map<std::string, const StoreSegment*> base_tensors;
  if (base.manifest) {
    base_tensors = tensors_by_name(*base.manifest);
    r.base = base.manifest->name;
    r.base_similarity = base.similarity;
  }

  std::set<std::string> dirty;
  std::set<codec::Sha256Digest> written;
  for (const Segment& seg : segments) {
    const StoreSegment& s = seg.s;
    bool tensor = !s.tensor.empty();
    if (tensor) ++r.tensors;
    if (written.count(s.key) || stored.count(s.key)) {
      if (tensor) ++r.tensors_existing;
      continue;
    }
    std::span<const uint8_t> bytes = data.subspan(s.offset, s.size);
    std::vector<uint8_t> object;
    if (tensor) {
      auto it = base_tensors.find(s.tensor);
      if (it != base_tensors.end() && same_layout(s, *it->second) && s.size > 0 && it->second->key != s.key) {
        auto depth = objects.delta_depth(it->second->key);
        if (depth && *depth < kStoreMaxDeltaDepth) {
          // The base is checked: a delta against bytes other than its key's would stop
          // restoring once the base object is repaired.
          std::string where = r.name + ": tensor '" + s.tensor + "': base " + base.manifest->name;
          try {
            Buffer b = objects.load(it->second->key, it->second->size, where, threads);
            object = store_object_bitx(seg.dtype, bytes, {b.data(), b.size()}, it->second->key, options.lossless);
          } catch (const Error& e) {
            if (e.kind() != ErrorKind::kInvalidInput) throw;  // a damaged base: stored plainly
          }
        }
      }
    }
    bool delta = !object.empty();
    if (!delta || static_cast<double>(object.size()) > kDeltaTryPlain * static_cast<double>(s.size)) {
      std::vector<uint8_t> plain = store_object_plain(seg.dtype, bytes, options.lossless);
      if (!delta || plain.size() <= object.size()) {
        object = std::move(plain);
        delta = false;
      }
    }
    r.written_bytes += objects.put(s.key, object, tdir, dirty, corrupt.count(s.key) > 0);
    written.insert(s.key);
    if (tensor) ++(delta ? r.tensors_delta : r.tensors_plain);
  }
  objects.sync(dirty);

  StoreManifest m;
  m.name = r.name;
  m.kind = r.safetensors ? "safetensors" : "opaque";
  m.size = data.size();
  m.sha256 = file_key;
  m.base = r.base;
  m.created = utc_now_iso8601();
  for (auto& seg : segments) m.segments.push_back(std::move(seg.s));
  std::vector<uint8_t> text = store_manifest_serialize(m);
  std::string target = store_manifest_file_name(r.name);
  // Of concurrent adds of different files under one name, exactly one publishes.
  fs::NameLock name_lock(mdir);
  check_name_free(root_, r.name, file_key, options.replace);
  r.replaced = mdir.type(target).has_value();
  fs::publish_file(tdir, fs::unique_name(), mdir, target, text);
  r.written_bytes += text.size();
  return r;
}

}  // namespace tk::store
