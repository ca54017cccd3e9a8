#include "tk/ckpt/step_reader.h"

// Inlined so that XXH3 is compiled for this machine's vector width (the shared
// library is built for the baseline): checksums run at memory speed.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tk/ckpt/dist_part.h"
#include "tk/ckpt/fileops.h"
#include "tk/codec/lossless.h"
#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/safetensors.h"

namespace tk::ckpt {

namespace {

// Raw tensors are read and hashed in pieces small enough to stay in cache between the
// read and the hash. (Measured on the benchmark VM: 256 KiB pieces, 16 MiB pieces and
// POSIX_FADV_WILLNEED for the whole tensor were no faster, cold or warm.)
constexpr size_t kReadPiece = size_t(1) << 20;
// Pieces handed to a stream's sink: read, hashed and handed on while in cache. With
// 16 MiB pieces the sink's copy (`tckpt restore -o`: into the page cache) read each
// piece back from memory, and the restore of 1 GiB took 2.4x as long (docs/BENCHMARKS.md).
constexpr uint64_t kStreamPiece = uint64_t(1) << 20;

std::string step_path(const std::string& root, uint64_t step) { return root + "/" + step_dir_name(step); }

Manifest load_step(const std::string& root, uint64_t step) {
  std::string dir = step_path(root, step);
  if (!fs::is_dir(dir)) throw invalid_input("no such step " + std::to_string(step), root);
  return read_manifest(dir);
}

}  // namespace

std::string tensor_where(uint64_t step, const std::string& name) {
  return step_dir_name(step) + ": tensor '" + name + "'";
}

StepReader::StepReader(std::string root, uint64_t step) : root_(std::move(root)) {
  manifest_ = load_step(root_, step);
  if (manifest_.info.step != step) throw invalid_input("manifest names another step", manifest_.info.dir);
  // Every step whose bytes this one uses, directly or through them (refs point at the
  // step holding the bytes; an XOR delta's base is a full step).
  std::vector<const Manifest*> todo = {&manifest_};
  while (!todo.empty()) {
    const Manifest* m = todo.back();
    todo.pop_back();
    for (const auto& e : m->info.entries) {
      if (!e.source_step || sources_.count(*e.source_step)) continue;
      if (*e.source_step >= m->info.step)
        throw invalid_input("refers to a later step " + std::to_string(*e.source_step), tensor_where(m->info.step, e.name));
      try {
        auto [it, inserted] = sources_.emplace(*e.source_step, load_step(root_, *e.source_step));
        todo.push_back(&it->second);
      } catch (const Error& err) {
        throw invalid_input("base step " + std::to_string(*e.source_step) + " is missing or damaged (" + err.message() + ")",
                            tensor_where(m->info.step, e.name));
      }
    }
  }
}

const TensorEntry& StepReader::source_entry(uint64_t step, const TensorEntry& entry) const {
  const Manifest& src = sources_.at(*entry.source_step);
  for (const auto& b : src.info.entries) {
    if (b.name != entry.name) continue;
    bool whole = b.encoding == "raw" || b.encoding == "lossless";
    // A reference may land on bytes stored whole or as a delta; a delta's base is whole.
    bool fits = entry.encoding == "ref" ? b.encoding != "ref" : whole;
    if (b.dtype != entry.dtype || b.shape != entry.shape || !fits)
      throw invalid_input("base tensor in step " + std::to_string(src.info.step) + " does not match",
                          tensor_where(step, entry.name));
    return b;
  }
  throw invalid_input("base tensor missing from step " + std::to_string(src.info.step), tensor_where(step, entry.name));
}

fs::File StepReader::open_stored(uint64_t step, const TensorEntry& e) const {
  const std::string where = tensor_where(step, e.name);
  std::string path = step_path(root_, step) + "/" + e.shard;
  fs::File file = [&] {
    try {
      return fs::open_read(path);
    } catch (const Error& err) {
      throw invalid_input(std::string("shard missing or unreadable: ") + err.message(), where);
    }
  }();
  uint64_t size = fs::file_size(file);
  if (e.offset > size || e.stored_bytes > size - e.offset) throw invalid_input("shard " + e.shard + " is truncated", where);
  return file;
}

// An entry read in order, a piece at a time: stored bytes (raw from the shard, or a
// lossless frame decoded by range from the mapped shard), a reference's source, or a
// delta's base XOR its stored bytes. Each level hashes what it returns; finish() checks
// every level's checksum, so a delta checks its base's as well as its own.
class StepReader::Cursor {
 public:
  Cursor(const StepReader& reader, uint64_t step, const TensorEntry& e) : e_(e), where_(tensor_where(step, e.name)) {
    XXH3_64bits_reset(&hash_);
    if (e.encoding != "raw" && e.encoding != "lossless")
      source_ = std::make_unique<Cursor>(reader, *e.source_step, reader.source_entry(step, e));
    if (e.encoding == "ref") return;
    file_ = reader.open_stored(step, e);
    raw_ = e.encoding == "raw" || e.encoding == "xor";
    if (raw_) {
      if (e.stored_bytes != e.nbytes) throw invalid_input("stored size does not match", where_);
      return;
    }
    map_ = Buffer::map_fd(file_.fd(), file_.path());
    try {
      frame_.emplace(std::span<const uint8_t>(map_.data() + e.offset, e.stored_bytes));
      if (frame_->size() != e.nbytes) throw invalid_input("decoded size does not match");
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::kInvalidInput) throw;
      throw invalid_input(std::string("corrupt data: ") + err.message(), where_);
    }
  }

  // The next out.size() bytes of the entry.
  void next(std::span<uint8_t> out) {
    if (source_) source_->next(out);
    if (e_.encoding != "ref") {
      if (!source_) {
        read_stored(out);
      } else {
        delta_.resize(out.size());
        read_stored(delta_);
        for (size_t i = 0; i < out.size(); ++i) out[i] ^= delta_[i];
      }
    }
    XXH3_64bits_update(&hash_, out.data(), out.size());
    at_ += out.size();
  }

  void finish() {
    if (source_) source_->finish();
    if (at_ != e_.nbytes) throw internal_error("entry read short", where_);
    if (XXH3_64bits_digest(&hash_) != e_.xxh3) throw invalid_input("checksum mismatch", where_);
  }

 private:
  void read_stored(std::span<uint8_t> out) {
    if (raw_) return fs::pread_all(file_, e_.offset + at_, out, "shard");
    try {
      read_frame(at_, out);
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::kInvalidInput) throw;
      throw invalid_input(std::string("corrupt data: ") + err.message(), where_);
    }
  }

  // Chunks the range covers whole are decoded into `out`; a chunk it holds in part is
  // decoded once into `chunk_` and kept, so that pieces smaller than the frame's chunks
  // (up to 64 MiB) cost one decode of each chunk, not one per piece.
  void read_frame(uint64_t offset, std::span<uint8_t> out) {
    const uint64_t size = frame_->chunk_bytes();
    while (!out.empty()) {
      const uint64_t c = offset / size, begin = c * size, end = std::min(begin + size, frame_->size());
      const uint64_t n = std::min<uint64_t>(out.size(), end - offset);
      if (c != chunk_index_ && offset == begin && n == end - begin) {
        frame_->read(offset, out.first(n), 1);
      } else {
        if (c != chunk_index_) {
          chunk_.resize(end - begin);
          frame_->read(begin, chunk_, 1);
          chunk_index_ = c;
        }
        std::memcpy(out.data(), chunk_.data() + (offset - begin), n);
      }
      offset += n;
      out = out.subspan(n);
    }
  }

  const TensorEntry& e_;
  std::string where_;
  std::unique_ptr<Cursor> source_;  // ref: the holder; xor: the base
  fs::File file_;
  bool raw_ = false;
  Buffer map_;
  std::optional<codec::LosslessFrame> frame_;
  std::vector<uint8_t> chunk_;  // the frame's chunk a piece ended inside
  uint64_t chunk_index_ = UINT64_MAX;
  std::vector<uint8_t> delta_;
  uint64_t at_ = 0;
  XXH3_state_t hash_;
};

void StepReader::stream(const TensorEntry& e, const std::function<void(std::span<const uint8_t>)>& sink) const {
  if (e.encoding == "sliced") {
    // Bands of whole rows of the global tensor, each read as a box from the slices
    // that hold it; a scalar, an empty tensor or a sub-byte dtype (saved whole) at once.
    std::vector<uint8_t> piece;
    const uint64_t rows = e.shape.empty() ? 0 : static_cast<uint64_t>(e.shape[0]);
    if (rows == 0 || e.nbytes == 0 || dtype_bits(e.dtype) % 8 != 0) {
      piece.resize(e.nbytes);
      read(e, piece);
      if (!piece.empty()) sink(piece);
      return;
    }
    const uint64_t row_bytes = e.nbytes / rows;
    const uint64_t band = std::max<uint64_t>(1, kStreamPiece / std::max<uint64_t>(row_bytes, 1));
    for (uint64_t r = 0; r < rows; r += band) {
      Box box{Shape(e.shape.size(), 0), e.shape};
      box.start[0] = static_cast<int64_t>(r);
      box.shape[0] = static_cast<int64_t>(std::min(band, rows - r));
      piece.resize(static_cast<uint64_t>(box.shape[0]) * row_bytes);
      read_box(e, box, piece);
      sink(piece);
    }
    return;
  }
  Cursor cursor(*this, manifest_.info.step, e);
  std::vector<uint8_t> piece;
  for (uint64_t at = 0; at < e.nbytes; at += kStreamPiece) {
    piece.resize(std::min<uint64_t>(kStreamPiece, e.nbytes - at));
    cursor.next(piece);
    sink(piece);
  }
  cursor.finish();
}

void StepReader::read(const TensorEntry& e, std::span<uint8_t> out) const {
  if (e.encoding == "sliced") return read_box(e, {Shape(e.shape.size(), 0), e.shape}, out);
  const std::string where = tensor_where(manifest_.info.step, e.name);
  if (out.size() != e.nbytes) throw internal_error("restore buffer has the wrong size", where);
  Cursor cursor(*this, manifest_.info.step, e);
  // Pieces small enough to stay in cache between the read and the hash.
  for (size_t done = 0; done < out.size(); done += kReadPiece)
    cursor.next(out.subspan(done, std::min(kReadPiece, out.size() - done)));
  cursor.finish();
}

void StepReader::read_box(const TensorEntry& e, const Box& want, std::span<uint8_t> out) const {
  const uint64_t step = manifest_.info.step;
  const std::string where = tensor_where(step, e.name);
  if (!box_inside(want, e.shape))
    throw usage_error("wanted box " + (want.start.size() == e.shape.size() ? box_to_string(want) : shape_to_string(want.shape)) +
                          " lies outside the saved shape " + shape_to_string(e.shape),
                      where);
  const bool whole = want.shape == e.shape;
  // Whole tensors of any dtype; boxes of whole-byte elements only.
  const uint64_t elem = whole && dtype_bits(e.dtype) % 8 ? 0 : slice_element_bytes(e.dtype, where);
  const uint64_t nbytes = elem ? elem * box_numel(want) : e.nbytes;
  if (out.size() != nbytes) throw internal_error("restore buffer has the wrong size", where);
  if (e.encoding != "sliced") {
    if (whole) return read(e, out);
    std::vector<uint8_t> all(e.nbytes);
    read(e, all);
    const Box saved{Shape(e.shape.size(), 0), e.shape};
    box_runs(saved, want, want, elem, [&](uint64_t s, uint64_t t, uint64_t n) { std::memcpy(out.data() + t, all.data() + s, n); });
    return;
  }
  if (elem > 0 && box_numel(want) == 0) return;
  if (elem == 0) {
    // A sub-byte dtype is saved whole, by one rank (check_sliced_entry).
    const SliceEntry& sl = e.slices.at(0);
    read_slice_part(e, sl, want, 0, out);
    return;
  }
  uint64_t copied = 0;
  for (const auto& sl : e.slices) copied += read_slice_part(e, sl, want, elem, out);
  if (copied != box_numel(want)) {
    std::vector<Box> boxes;
    for (const auto& sl : e.slices) boxes.push_back({sl.start, sl.shape});
    auto point = box_uncovered_point(want, boxes);
    throw invalid_input("no saved slice covers " + (point ? "index " + shape_to_string(*point) + " of " : std::string()) +
                            "the wanted box " + box_to_string(want),
                        where);
  }
}

std::string StepReader::slice_where(uint64_t step, const TensorEntry& e, const SliceEntry& sl) {
  return tensor_where(step, e.name) + ": slice " + box_to_string({sl.start, sl.shape}) + " of rank " + std::to_string(sl.rank);
}

fs::File StepReader::open_slice(uint64_t step, const TensorEntry& e, const SliceEntry& sl) const {
  fs::File file = [&] {
    try {
      return fs::open_read(step_path(root_, step) + "/" + sl.shard);
    } catch (const Error& err) {
      throw invalid_input(std::string("shard missing or unreadable: ") + err.message(), slice_where(step, e, sl));
    }
  }();
  const uint64_t size = fs::file_size(file);
  if (sl.offset > size || sl.nbytes > size - sl.offset)
    throw invalid_input("shard " + sl.shard + " is truncated", slice_where(step, e, sl));
  return file;
}

uint64_t StepReader::read_slice_part(const TensorEntry& e, const SliceEntry& sl, const Box& want, uint64_t elem,
                                     std::span<uint8_t> out) const {
  const uint64_t step = manifest_.info.step;
  const Box saved{sl.start, sl.shape};
  std::optional<Box> region = elem == 0 ? std::optional<Box>(saved) : box_intersect(saved, want);
  if (!region) return 0;
  const std::string where = slice_where(step, e, sl);
  // Which blocks of the slice hold wanted bytes.
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // (offset in the slice, offset in out)
  std::vector<uint64_t> run_len;
  if (elem == 0) {
    runs.push_back({0, 0});
    run_len.push_back(sl.nbytes);
  } else {
    box_runs(saved, want, *region, elem, [&](uint64_t s, uint64_t t, uint64_t n) {
      runs.push_back({s, t});
      run_len.push_back(n);
    });
  }
  const uint64_t nblocks = sl.blocks.size();
  std::vector<bool> touched(nblocks, false);
  for (size_t k = 0; k < runs.size(); ++k) {
    if (run_len[k] == 0) continue;
    for (uint64_t b = runs[k].first / kSliceBlockBytes; b <= (runs[k].first + run_len[k] - 1) / kSliceBlockBytes; ++b)
      touched[b] = true;
  }
  fs::File file = open_slice(step, e, sl);
  // Every touched block is read and checked once. Blocks that lie inside one run of
  // wanted bytes are read straight into `out` (consecutive ones in one pread); a block
  // that straddles a run's edge goes through a scratch buffer, and its wanted bytes are
  // copied out. When every block is read, the slice's own checksum is checked too.
  const bool all_blocks = std::all_of(touched.begin(), touched.end(), [](bool t) { return t; });
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> whole(all_blocks ? XXH3_createState() : nullptr,
                                                                  &XXH3_freeState);
  if (all_blocks && !whole) throw std::bad_alloc();
  if (whole) XXH3_64bits_reset(whole.get());
  auto check_block = [&](uint64_t k, const uint8_t* bytes, uint64_t n) {
    if (XXH3_64bits(bytes, n) != sl.blocks[k]) throw invalid_input("checksum mismatch in block " + std::to_string(k), where);
    if (whole) XXH3_64bits_update(whole.get(), bytes, n);
  };
  auto block_end = [&](uint64_t k) { return std::min<uint64_t>((k + 1) * kSliceBlockBytes, sl.nbytes); };
  size_t r = 0;  // runs before it end before the current block
  std::vector<uint8_t> scratch;
  for (uint64_t b = 0; b < nblocks;) {
    if (!touched[b]) {
      ++b;
      continue;
    }
    const uint64_t lo = b * kSliceBlockBytes;
    while (r < runs.size() && runs[r].first + run_len[r] <= lo) ++r;
    const uint64_t run_end = r < runs.size() ? runs[r].first + run_len[r] : 0;
    if (r < runs.size() && runs[r].first <= lo && block_end(b) <= run_end) {
      uint64_t end = b + 1;
      while (end < nblocks && touched[end] && block_end(end) <= run_end) ++end;
      uint8_t* dst = out.data() + runs[r].second + (lo - runs[r].first);
      fs::pread_all(file, sl.offset + lo, {dst, block_end(end - 1) - lo}, "shard");
      for (uint64_t k = b; k < end; ++k) check_block(k, dst + (k - b) * kSliceBlockBytes, block_end(k) - k * kSliceBlockBytes);
      b = end;
      continue;
    }
    const uint64_t hi = block_end(b);
    scratch.resize(hi - lo);
    fs::pread_all(file, sl.offset + lo, {scratch.data(), hi - lo}, "shard");
    check_block(b, scratch.data(), hi - lo);
    for (size_t j = r; j < runs.size() && runs[j].first < hi; ++j) {
      const uint64_t s0 = std::max(runs[j].first, lo), s1 = std::min(runs[j].first + run_len[j], hi);
      if (s0 < s1) std::memcpy(out.data() + runs[j].second + (s0 - runs[j].first), scratch.data() + (s0 - lo), s1 - s0);
    }
    ++b;
  }
  if (whole && XXH3_64bits_digest(whole.get()) != sl.xxh3) throw invalid_input("checksum mismatch", where);
  return elem ? box_numel(*region) : box_numel(want);
}

void StepReader::check_claims(const TensorEntry& e) const { check_entry_claims(manifest_.info.step, e); }

void StepReader::check_entry_claims(uint64_t step, const TensorEntry& e) const {
  if (e.encoding == "sliced") {
    for (const auto& sl : e.slices) open_slice(step, e, sl);
    return;
  }
  if (e.encoding == "raw" || e.encoding == "lossless") return check_stored_claims(step, e);
  // A reference's bytes, or a delta's base, are those of the same tensor in its source.
  check_entry_claims(*e.source_step, source_entry(step, e));
  if (e.encoding != "ref") check_stored_claims(step, e);
}

void StepReader::check_stored_claims(uint64_t step, const TensorEntry& e) const {
  const std::string where = tensor_where(step, e.name);
  fs::File file = open_stored(step, e);
  if (e.encoding == "raw" || e.encoding == "xor") {
    if (e.stored_bytes != e.nbytes) throw invalid_input("stored size does not match", where);
    return;
  }
  uint8_t head[codec::kLosslessHeaderBytes] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(e.stored_bytes, sizeof head));
  fs::pread_all(file, e.offset, {head, n}, "shard");
  try {
    const uint64_t claimed = codec::lossless_claimed_size({head, n}, e.stored_bytes);
    if (claimed != e.nbytes)
      throw invalid_input("frame claims " + std::to_string(claimed) + " bytes, the manifest " + std::to_string(e.nbytes));
  } catch (const Error& err) {
    if (err.kind() != ErrorKind::kInvalidInput) throw;
    throw invalid_input(std::string("corrupt data: ") + err.what(), where);
  }
}

std::vector<std::string> StepReader::check_layout() const {
  std::vector<std::string> problems;
  const std::string dir = manifest_.info.dir;
  for (const auto& sh : manifest_.shards) {
    std::string path = dir + "/" + sh.file;
    std::string where = step_dir_name(manifest_.info.step) + "/" + sh.file;
    try {
      fs::File file = fs::open_read(path);
      uint64_t size = fs::file_size(file);
      if (size != sh.bytes) {
        problems.push_back(where + ": size " + std::to_string(size) + " bytes, manifest says " + std::to_string(sh.bytes));
        continue;
      }
      uint8_t prefix[8];
      fs::pread_all(file, 0, prefix, "safetensors header");
      const uint64_t n = load_le<uint64_t>(prefix);
      if (n > io::kSafetensorsMaxHeader || n > size - 8) {
        problems.push_back(where + ": bad safetensors header length");
        continue;
      }
      std::vector<uint8_t> json(n);
      fs::pread_all(file, 8, json, "safetensors header");
      io::SafetensorsHeader header = io::safetensors_parse_header(json);
      if (8 + n + header.data_size != size) problems.push_back(where + ": safetensors data size does not match the file");
      // By name, so that a step of many tensors is checked in n log n, not n^2.
      std::unordered_map<std::string_view, size_t> by_name;
      for (size_t k = 0; k < header.tensors.size(); ++k) by_name.emplace(header.tensors[k].name, k);
      for (const auto& e : manifest_.info.entries)
        for (const auto& sl : e.slices) {
          if (sl.shard != sh.file) continue;
          auto found = by_name.find(e.name);
          if (found == by_name.end())
            problems.push_back(tensor_where(manifest_.info.step, e.name) + ": slice of rank " + std::to_string(sl.rank) + " not in " + sh.file);
          else if (8 + n + header.offsets[found->second] != sl.offset || header.tensors[found->second].nbytes != sl.nbytes)
            problems.push_back(tensor_where(manifest_.info.step, e.name) + ": offset or size in " + sh.file + " disagrees with the manifest");
        }
      for (const auto& e : manifest_.info.entries) {
        if (e.shard != sh.file) continue;
        auto found = by_name.find(e.name);
        if (found == by_name.end()) {
          problems.push_back(tensor_where(manifest_.info.step, e.name) + ": not in " + sh.file);
          continue;
        }
        const size_t k = found->second;
        const io::TensorInfo* it = &header.tensors[k];
        if (8 + n + header.offsets[k] != e.offset || it->nbytes != e.stored_bytes)
          problems.push_back(tensor_where(manifest_.info.step, e.name) + ": offset or size in " + sh.file + " disagrees with the manifest");
      }
    } catch (const Error& err) {
      std::string msg = err.message();
      problems.push_back(where + ": " + msg);
    }
  }
  std::vector<std::string> parts = check_parts();
  problems.insert(problems.end(), parts.begin(), parts.end());
  return problems;
}

namespace {

std::string shape_or_box(const SliceEntry& sl) { return box_to_string({sl.start, sl.shape}); }

// The first field in which slice `got` (merged from the parts) differs from `want` (the
// manifest's), or "".
std::string slice_difference(const SliceEntry& got, const SliceEntry& want) {
  if (got.rank != want.rank) return "rank " + std::to_string(got.rank) + ", the manifest rank " + std::to_string(want.rank);
  if (got.start != want.start || got.shape != want.shape)
    return "slice " + shape_or_box(got) + ", the manifest " + shape_or_box(want);
  if (got.shard != want.shard) return "shard " + got.shard + ", the manifest " + want.shard;
  if (got.offset != want.offset)
    return "offset " + std::to_string(got.offset) + ", the manifest " + std::to_string(want.offset);
  if (got.nbytes != want.nbytes)
    return std::to_string(got.nbytes) + " bytes, the manifest " + std::to_string(want.nbytes);
  if (got.xxh3 != want.xxh3 || got.blocks != want.blocks) return "other checksums than the manifest";
  return "";
}

// Where the step merged from its parts differs from its manifest, one line per tensor.
std::vector<std::string> manifest_differences(const Manifest& merged, const Manifest& m) {
  std::vector<std::string> out;
  const uint64_t step = m.info.step;
  std::map<std::string_view, const TensorEntry*> by_name;
  for (const auto& e : merged.info.entries) by_name.emplace(e.name, &e);
  for (const auto& e : m.info.entries) {
    auto it = by_name.find(e.name);
    const std::string where = tensor_where(step, e.name) + ": the rank parts ";
    if (it == by_name.end()) {
      out.push_back(where + "do not hold it");
      continue;
    }
    const TensorEntry& g = *it->second;
    by_name.erase(it);
    if (g.dtype != e.dtype || g.shape != e.shape) {
      out.push_back(where + "say " + dtype_name(g.dtype) + " " + shape_to_string(g.shape) + ", the manifest " +
                    dtype_name(e.dtype) + " " + shape_to_string(e.shape));
    } else if (g.slices.size() != e.slices.size()) {
      out.push_back(where + "hold " + std::to_string(g.slices.size()) + " slices of it, the manifest lists " +
                    std::to_string(e.slices.size()));
    } else {
      auto order = [](const SliceEntry* a, const SliceEntry* b) {
        return std::tie(a->rank, a->start, a->shape) < std::tie(b->rank, b->start, b->shape);
      };
      std::vector<const SliceEntry*> gs, es;
      for (const auto& sl : g.slices) gs.push_back(&sl);
      for (const auto& sl : e.slices) es.push_back(&sl);
      std::sort(gs.begin(), gs.end(), order);
      std::sort(es.begin(), es.end(), order);
      for (size_t k = 0; k < es.size(); ++k) {
        std::string diff = slice_difference(*gs[k], *es[k]);
        if (diff.empty()) continue;
        out.push_back(where + "say " + diff + " (rank " + std::to_string(es[k]->rank) + ")");
        break;
      }
    }
  }
  for (const auto& [name, e] : by_name) out.push_back(tensor_where(step, std::string(name)) + ": saved by the rank parts, not in the manifest");
  auto shard_list = [](const std::vector<ShardInfo>& v) {
    std::vector<std::pair<std::string, uint64_t>> l;
    for (const auto& sh : v) l.emplace_back(sh.file, sh.bytes);
    std::sort(l.begin(), l.end());
    return l;
  };
  if (shard_list(merged.shards) != shard_list(m.shards))
    out.push_back(step_dir_name(step) + ": the rank parts name other shards or sizes than the manifest");
  return out;
}

}  // namespace

// Each rank's part must be there and merge into exactly the manifest: the parts are
// what the ranks wrote, the manifest what rank 0 made of them, so a part changed after
// the commit (a slice's offset, dtype or shape, with its checksum recomputed) shows
// here even where the data still reads.
std::vector<std::string> StepReader::check_parts() const {
  std::vector<std::string> problems;
  const StepInfo& info = manifest_.info;
  if (info.world_size == 0) return problems;
  io::DirFd dir = io::DirFd::open(info.dir);
  std::vector<RankPart> parts;
  std::vector<uint64_t> part_bytes;
  for (uint32_t r = 0; r < info.world_size; ++r) {
    try {
      parts.push_back(read_part(dir, r, info.step));
      part_bytes.push_back(dir.file_size(part_file_name(r)).value_or(0));
    } catch (const Error& err) {
      problems.push_back((err.where().empty() ? "" : err.where() + ": ") + err.message());
    }
  }
  if (!problems.empty()) return problems;
  try {
    return manifest_differences(merge_parts(info.step, parts, part_bytes), manifest_);
  } catch (const Error& err) {
    problems.push_back((err.where().empty() ? "" : err.where() + ": ") + "the rank parts do not merge: " + err.message());
  }
  return problems;
}

void StepReader::require_parts() const {
  std::vector<std::string> problems = check_parts();
  if (problems.empty()) return;
  std::string more = problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more problems)" : "";
  throw invalid_input(problems.front() + more);
}

}  // namespace tk::ckpt
