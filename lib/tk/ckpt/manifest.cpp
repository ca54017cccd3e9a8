#include "tk/ckpt/manifest.h"

#include <xxhash.h>

#include <charconv>

#include "tk/ckpt/box.h"
#include "tk/ckpt/fileops.h"
#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"

namespace tk::ckpt {

using nlohmann::json;

namespace {

// A shard is a file of the step directory itself: no '/', no leading '.' (so no "..").
bool valid_shard_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name[0] != '.';
}


json entry_to_json(const TensorEntry& e) {
  json shape = json::array();
  for (auto d : e.shape) shape.push_back(d);
  json j = {{"name", e.name}, {"dtype", dtype_name(e.dtype)}, {"shape", shape}, {"nbytes", e.nbytes}, {"encoding", e.encoding}};
  if (e.encoding == "sliced") {
    // Each slice has its own checksums; the assembled tensor exists only when restored.
    json slices = json::array();
    for (const auto& sl : e.slices) slices.push_back(slice_to_json(sl));
    j["slices"] = slices;
    return j;
  }
  j["xxh3"] = hash_hex(e.xxh3);
  if (!e.shard.empty()) {
    j["shard"] = e.shard;
    j["offset"] = e.offset;
    j["stored_bytes"] = e.stored_bytes;
  }
  if (e.source_step) j["source_step"] = *e.source_step;
  return j;
}

bool valid_encoding(const std::string& enc) {
  return enc == "raw" || enc == "lossless" || enc == "xor" || enc == "xor-lossless" || enc == "ref";
}

json shape_json(const Shape& shape) {
  json j = json::array();
  for (auto d : shape) j.push_back(d);
  return j;
}

Shape shape_from_json(const json& j, const std::string& where) {
  Shape shape;
  for (const auto& d : j) shape.push_back(d.get<int64_t>());
  if (shape.size() > 64) throw invalid_input("too many dimensions", where);
  return shape;
}

TensorEntry sliced_entry_from_json(const json& j, TensorEntry e, uint32_t world_size, const std::string& w) {
  if (world_size == 0) throw invalid_input("sliced tensor in a single-process step", w);
  for (const auto& sl : j.at("slices")) e.slices.push_back(slice_from_json(sl, w));
  check_sliced_entry(e, world_size, w, ErrorKind::kInvalidInput);
  return e;
}

TensorEntry entry_from_json(const json& j, const std::string& where, uint32_t world_size) {
  TensorEntry e;
  e.name = j.at("name").get<std::string>();
  std::string w = where + ": tensor '" + e.name + "'";
  auto dtype = dtype_from_safetensors_name(j.at("dtype").get<std::string>());
  if (!dtype) throw invalid_input("unknown dtype in manifest", w);
  e.dtype = *dtype;
  for (const auto& d : j.at("shape")) {
    e.shape.push_back(d.get<int64_t>());
    if (e.shape.back() < 0) throw invalid_input("negative dimension in manifest", w);
  }
  e.nbytes = j.at("nbytes").get<uint64_t>();
  if (dtype_storage_bytes(e.dtype, shape_numel(e.shape)) != e.nbytes) throw invalid_input("size does not match dtype and shape", w);
  e.encoding = j.at("encoding").get<std::string>();
  if (e.encoding == "sliced") return sliced_entry_from_json(j, std::move(e), world_size, w);
  if (!valid_encoding(e.encoding)) throw invalid_input("unknown encoding '" + e.encoding + "'", w);
  auto h = parse_hash_hex(j.at("xxh3").get<std::string>());
  if (!h) throw invalid_input("malformed checksum", w);
  e.xxh3 = *h;
  if (e.encoding != "ref") {
    e.shard = j.at("shard").get<std::string>();
    if (!valid_shard_name(e.shard)) throw invalid_input("bad shard name", w);
    e.offset = j.at("offset").get<uint64_t>();
    e.stored_bytes = j.at("stored_bytes").get<uint64_t>();
    if (e.encoding == "raw" && e.stored_bytes != e.nbytes) throw invalid_input("stored size does not match", w);
  }
  if (j.contains("source_step")) e.source_step = j.at("source_step").get<uint64_t>();
  bool needs_source = e.encoding == "ref" || e.encoding.starts_with("xor");
  if (needs_source != e.source_step.has_value()) throw invalid_input("source step missing or unexpected", w);
  return e;
}

}  // namespace

std::string hash_hex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::optional<uint64_t> parse_hash_hex(const std::string& text) {
  if (text.size() != 16) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

uint64_t slice_element_bytes(DType dtype, const std::string& where) {
  if (dtype_bits(dtype) % 8 != 0)
    throw usage_error(std::string(dtype_name(dtype)) + " elements are not whole bytes, so it cannot be sliced", where);
  return static_cast<uint64_t>(dtype_bits(dtype) / 8);
}

json slice_to_json(const SliceEntry& sl) {
  json blocks = json::array();
  for (uint64_t b : sl.blocks) blocks.push_back(hash_hex(b));
  return {{"rank", sl.rank},           {"shard", sl.shard},         {"offset", sl.offset},
          {"start", shape_json(sl.start)}, {"shape", shape_json(sl.shape)}, {"nbytes", sl.nbytes},
          {"xxh3", hash_hex(sl.xxh3)}, {"blocks", blocks}};
}

SliceEntry slice_from_json(const json& j, const std::string& where) {
  SliceEntry sl;
  sl.rank = j.at("rank").get<uint32_t>();
  sl.shard = j.at("shard").get<std::string>();
  // Empty only for a replica another rank saved (rank parts); check_sliced_entry refuses it.
  if (!sl.shard.empty() && !valid_shard_name(sl.shard)) throw invalid_input("bad shard name", where);
  sl.offset = j.at("offset").get<uint64_t>();
  sl.start = shape_from_json(j.at("start"), where);
  sl.shape = shape_from_json(j.at("shape"), where);
  sl.nbytes = j.at("nbytes").get<uint64_t>();
  auto h = parse_hash_hex(j.at("xxh3").get<std::string>());
  if (!h) throw invalid_input("malformed checksum", where);
  sl.xxh3 = *h;
  for (const auto& b : j.at("blocks")) {
    auto bh = parse_hash_hex(b.get<std::string>());
    if (!bh) throw invalid_input("malformed block checksum", where);
    sl.blocks.push_back(*bh);
  }
  return sl;
}

void check_sliced_entry(const TensorEntry& e, uint32_t world_size, const std::string& where, ErrorKind kind) {
  auto fail = [&](const std::string& what) { throw Error(kind, what, where); };
  const uint64_t elem = dtype_bits(e.dtype) % 8 == 0 ? static_cast<uint64_t>(dtype_bits(e.dtype) / 8) : 0;
  std::vector<Box> boxes;
  uint64_t covered = 0;
  for (const auto& sl : e.slices) {
    const Box box{sl.start, sl.shape};
    const std::string rank = "rank " + std::to_string(sl.rank);
    if (sl.rank >= world_size) fail("slice from " + rank + " of a " + std::to_string(world_size) + "-rank step");
    if (sl.shard.empty()) fail("slice from " + rank + " names no shard");
    if (!box_inside(box, e.shape))
      fail("slice " + (box.start.size() == e.shape.size() ? box_to_string(box) : shape_to_string(box.shape)) + " from " +
           rank + " lies outside the global shape " + shape_to_string(e.shape));
    const uint64_t numel = box_numel(box);
    const bool whole = box.shape == e.shape;
    if (elem == 0 && !whole) fail(std::string(dtype_name(e.dtype)) + " elements are not whole bytes, so it cannot be sliced");
    const uint64_t want = elem ? numel * elem : e.nbytes;
    if (sl.nbytes != want) fail("slice " + box_to_string(box) + " from " + rank + " holds " + std::to_string(sl.nbytes) +
                                " bytes, its shape needs " + std::to_string(want));
    if (sl.blocks.size() != (sl.nbytes + kSliceBlockBytes - 1) / kSliceBlockBytes)
      fail("slice " + box_to_string(box) + " from " + rank + " has the wrong number of block checksums");
    for (size_t k = 0; k < boxes.size(); ++k)
      if (numel > 0 && box_intersect(boxes[k], box))
        fail("slices " + box_to_string(boxes[k]) + " from rank " + std::to_string(e.slices[k].rank) + " and " +
             box_to_string(box) + " from " + rank + " overlap");
    boxes.push_back(box);
    covered += numel;
  }
  const uint64_t total = shape_numel(e.shape);
  if (covered != total) {
    auto point = box_uncovered_point({Shape(e.shape.size(), 0), e.shape}, boxes);
    fail("missing slice: the saved slices cover " + std::to_string(covered) + " of " + std::to_string(total) +
         " elements" + (point ? ", none covers index " + shape_to_string(*point) : std::string()));
  }
}

std::vector<uint8_t> manifest_encode(const Manifest& m) {
  const StepInfo& s = m.info;
  json j;
  j["format"] = kManifestFormat;
  j["version"] = s.world_size ? kDistManifestVersion : kManifestVersion;
  j["step"] = s.step;
  if (s.world_size) {
    j["world_size"] = s.world_size;
    j["slice_block_bytes"] = kSliceBlockBytes;
    json parts = json::array();
    for (const auto& p : m.parts) parts.push_back({{"file", p.file}, {"bytes", p.bytes}});
    j["parts"] = parts;
  }
  j["created"] = s.created;
  j["parent"] = s.parent ? json(*s.parent) : json(nullptr);
  j["metadata"] = s.metadata;
  json shards = json::array();
  for (const auto& sh : m.shards) shards.push_back({{"file", sh.file}, {"bytes", sh.bytes}});
  j["shards"] = shards;
  json tensors = json::array();
  for (const auto& e : s.entries) tensors.push_back(entry_to_json(e));
  j["tensors"] = tensors;
  std::string body;
  try {
    body = j.dump();
  } catch (const json::type_error&) {
    // Names from HDF5 or .npz files may be any bytes; JSON holds only UTF-8.
    throw invalid_input("a tensor name or metadata value is not valid UTF-8, which the manifest cannot hold");
  }
  j["checksum"] = hash_hex(XXH3_64bits(body.data(), body.size()));
  std::string text = j.dump(1) + "\n";
  return {text.begin(), text.end()};
}

Manifest manifest_decode(std::span<const uint8_t> bytes, const std::string& where) {
  json j = json_parse({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, "checkpoint manifest", where);
  if (!j.is_object()) throw invalid_input("checkpoint manifest is not a JSON object", where);
  Manifest m;
  try {
    if (j.value("format", "") != kManifestFormat) throw invalid_input("not a tensorkit checkpoint manifest", where);
    int version = j.at("version").get<int>();
    if (version != kManifestVersion && version != kDistManifestVersion)
      throw invalid_input("unsupported manifest version " + std::to_string(version), where);
    auto sum = parse_hash_hex(j.at("checksum").get<std::string>());
    json body = j;
    body.erase("checksum");
    std::string text = body.dump();
    if (!sum || *sum != XXH3_64bits(text.data(), text.size())) throw invalid_input("manifest checksum mismatch", where);
    StepInfo& s = m.info;
    s.step = j.at("step").get<uint64_t>();
    s.created = j.at("created").get<std::string>();
    if (!j.at("parent").is_null()) s.parent = j.at("parent").get<uint64_t>();
    s.metadata = j.at("metadata").get<Metadata>();
    if (version == kDistManifestVersion) {
      uint64_t world = j.at("world_size").get<uint64_t>();
      if (world == 0 || world > (1u << 24)) throw invalid_input("implausible world size " + std::to_string(world), where);
      s.world_size = static_cast<uint32_t>(world);
      if (j.at("slice_block_bytes").get<uint64_t>() != kSliceBlockBytes)
        throw invalid_input("unsupported slice block size", where);
      for (const auto& p : j.at("parts")) {
        m.parts.push_back({p.at("file").get<std::string>(), p.at("bytes").get<uint64_t>()});
        if (!valid_shard_name(m.parts.back().file)) throw invalid_input("bad part file name", where);
      }
      if (m.parts.size() != s.world_size)
        throw invalid_input("lists " + std::to_string(m.parts.size()) + " rank parts for " + std::to_string(s.world_size) +
                                " ranks",
                            where);
    }
    for (const auto& sh : j.at("shards")) {
      m.shards.push_back({sh.at("file").get<std::string>(), sh.at("bytes").get<uint64_t>()});
      if (!valid_shard_name(m.shards.back().file)) throw invalid_input("bad shard name", where);
    }
    for (const auto& t : j.at("tensors")) {
      s.entries.push_back(entry_from_json(t, where, s.world_size));
      s.logical_bytes += s.entries.back().nbytes;
    }
    s.tensors = s.entries.size();
  } catch (const json::exception& e) {
    throw invalid_input(std::string("malformed manifest: ") + e.what(), where);
  }
  return m;
}

Manifest read_manifest(const std::string& step_dir) {
  std::string path = step_dir + "/" + kManifestName;
  if (!fs::exists(path)) throw invalid_input("no manifest (not a committed step)", step_dir);
  std::vector<uint8_t> bytes = fs::read_file(path, kMaxManifestBytes);
  Manifest m = manifest_decode(bytes, path);
  m.info.dir = step_dir;
  m.info.stored_bytes = bytes.size();
  for (const auto& sh : m.shards) m.info.stored_bytes += sh.bytes;
  return m;
}

std::string step_dir_name(uint64_t step) { return "step-" + std::to_string(step); }

std::optional<uint64_t> parse_step_dir_name(const std::string& name) {
  if (!name.starts_with("step-") || name.size() == 5 || name.size() > 25) return std::nullopt;
  std::string digits = name.substr(5);
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return v;
}

bool is_leftover_name(const std::string& name) {
  auto tmp = name.find(".tmp-");
  auto del = name.find(".del-");
  auto cut = std::min(tmp, del);
  if (cut == std::string::npos) return false;
  std::string base = name.substr(0, cut);
  return base == "latest" || base == "durable" || parse_step_dir_name(base).has_value();
}

bool is_checkpoint_entry_name(const std::string& name) {
  return name == ".lock" || name == "latest" || name == "durable" || parse_step_dir_name(name).has_value() ||
         is_leftover_name(name);
}

std::vector<uint64_t> committed_steps(const std::string& root) {
  std::vector<uint64_t> steps;
  for (const auto& name : fs::list_dir(root)) {
    auto step = parse_step_dir_name(name);
    if (step && fs::exists(root + "/" + name + "/" + kManifestName)) steps.push_back(*step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace tk::ckpt
