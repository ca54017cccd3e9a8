#include "tk/ckpt/dist_part.h"

// Inlined so that XXH3 is compiled for this machine's vector width (see engine.cpp).
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fcntl.h>

#include <future>
#include <map>
#include <memory>
#include <set>

#include "tk/ckpt/fileops.h"
#include "tk/ckpt/shard_writer.h"
#include "tk/ckpt/tier.h"
#include "tk/core/clock.h"
#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"

namespace tk::ckpt {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxPartBytes = 1ull << 30;

std::string rank_file(uint32_t rank, const char* ext) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "rank-%05u.%s", rank, ext);
  return buf;
}

json shape_json(const Shape& shape) {
  json j = json::array();
  for (auto d : shape) j.push_back(d);
  return j;
}

// The slice's whole checksum and one per block, in one pass over the bytes.
void hash_slice(std::span<const uint8_t> bytes, SliceEntry& sl) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  if (!state) throw std::bad_alloc();
  XXH3_64bits_reset(state.get());
  sl.blocks.clear();
  for (uint64_t done = 0; done < bytes.size(); done += kSliceBlockBytes) {
    const uint64_t n = std::min<uint64_t>(kSliceBlockBytes, bytes.size() - done);
    sl.blocks.push_back(XXH3_64bits(bytes.data() + done, n));
    XXH3_64bits_update(state.get(), bytes.data() + done, n);
  }
  sl.xxh3 = XXH3_64bits_digest(state.get());
}

std::string checksummed_dump(json j) {
  const std::string body = j.dump();
  j["checksum"] = hash_hex(XXH3_64bits(body.data(), body.size()));
  return j.dump(1) + "\n";
}

}  // namespace

std::string part_file_name(uint32_t rank) { return rank_file(rank, "json"); }
std::string shard_file_name(uint32_t rank) { return rank_file(rank, "safetensors"); }

void check_local_slices(const std::vector<LocalSlice>& slices) {
  std::set<std::string_view> names;
  for (const auto& s : slices) {
    if (s.name.empty()) throw usage_error("tensor with an empty name");
    const std::string where = "tensor '" + s.name + "'";
    if (!names.insert(s.name).second) throw usage_error("passed twice by this rank", where);
    if (!box_inside(s.box, s.global_shape))
      throw usage_error("slice " + (s.box.start.size() == s.global_shape.size() ? box_to_string(s.box) : shape_to_string(s.box.shape)) +
                            " lies outside the global shape " + shape_to_string(s.global_shape),
                        where);
    if (s.replicated && (s.box.shape != s.global_shape))
      throw usage_error("a replicated tensor must be passed whole", where);
    const bool whole = s.box.shape == s.global_shape;
    const uint64_t want = whole ? dtype_storage_bytes(s.dtype, shape_numel(s.global_shape))
                                : slice_element_bytes(s.dtype, where) * box_numel(s.box);
    if (s.bytes.size() != want)
      throw usage_error("slice holds " + std::to_string(s.bytes.size()) + " bytes, " + dtype_name(s.dtype) + " " +
                            shape_to_string(s.box.shape) + " needs " + std::to_string(want),
                        where);
  }
}

RankPart write_rank_part(const io::DirFd& tmp, uint64_t step, uint32_t rank, uint32_t world_size,
                         const std::vector<LocalSlice>& slices, int threads, uint64_t* written,
                         std::vector<uint8_t>* encoded) {
  RankPart part;
  part.step = step;
  part.rank = rank;
  part.world_size = world_size;
  part.pieces.resize(slices.size());
  std::vector<ShardItem> items;
  std::vector<size_t> stored;
  for (size_t i = 0; i < slices.size(); ++i) {
    if (!slices[i].store) continue;
    stored.push_back(i);
    items.push_back({{slices[i].name, slices[i].dtype, slices[i].box.shape, slices[i].bytes.size()}, slices[i].bytes});
  }
  // The shard goes to the disk while the checksums are taken: both only read the
  // staged bytes, and the part that needs both is written once both are done.
  const std::string name = shard_file_name(rank);
  std::future<WrittenShard> shard;
  if (!items.empty())
    shard = std::async(std::launch::async, [&] { return write_shard(tmp, name, items, {}, fs::kDirectAlignment); });
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (size_t i = 0; i < slices.size(); ++i) {
    const LocalSlice& s = slices[i];
    PartPiece& p = part.pieces[i];
    p.name = s.name;
    p.dtype = s.dtype;
    p.global_shape = s.global_shape;
    p.replicated = s.replicated;
    p.stored = s.store;
    p.slice.rank = rank;
    p.slice.start = s.box.start;
    p.slice.shape = s.box.shape;
    p.slice.nbytes = s.bytes.size();
    hash_slice(s.bytes, p.slice);
    if (!s.store) p.slice.blocks.clear();
  }
  if (shard.valid()) {
    WrittenShard written_shard = shard.get();
    for (size_t k = 0; k < stored.size(); ++k) {
      part.pieces[stored[k]].slice.shard = name;
      part.pieces[stored[k]].slice.offset = written_shard.offsets[k];
    }
    part.shard = ShardInfo{name, written_shard.bytes};
    *written += written_shard.bytes;
  }
  std::vector<uint8_t> bytes = part_encode(part);
  fs::File file = fs::create_file(tmp, part_file_name(rank));
  fs::write_all(file, bytes);
  fs::fsync_file(file);
  *written += bytes.size();
  *encoded = std::move(bytes);
  return part;
}

std::vector<uint8_t> part_encode(const RankPart& part) {
  json pieces = json::array();
  for (const auto& p : part.pieces) {
    json j = {{"name", p.name},
              {"dtype", dtype_name(p.dtype)},
              {"global_shape", shape_json(p.global_shape)},
              {"replicated", p.replicated},
              {"stored", p.stored},
              {"slice", slice_to_json(p.slice)}};
    pieces.push_back(std::move(j));
  }
  json j = {{"format", kPartFormat},
            {"version", 1},
            {"step", part.step},
            {"rank", part.rank},
            {"world_size", part.world_size},
            {"shard", part.shard ? json{{"file", part.shard->file}, {"bytes", part.shard->bytes}} : json(nullptr)},
            {"pieces", pieces}};
  std::string text;
  try {
    text = checksummed_dump(std::move(j));
  } catch (const json::type_error&) {
    throw usage_error("a tensor name is not valid UTF-8, which the manifest cannot hold");
  }
  return {text.begin(), text.end()};
}

RankPart part_decode(std::span<const uint8_t> bytes, const std::string& where) {
  json j = json_parse({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, "checkpoint rank part", where);
  RankPart part;
  try {
    if (!j.is_object() || j.value("format", "") != kPartFormat) throw invalid_input("not a checkpoint rank part", where);
    if (j.at("version").get<int>() != 1) throw invalid_input("unsupported rank part version", where);
    auto sum = parse_hash_hex(j.at("checksum").get<std::string>());
    json body = j;
    body.erase("checksum");
    const std::string text = body.dump();
    if (!sum || *sum != XXH3_64bits(text.data(), text.size())) throw invalid_input("rank part checksum mismatch", where);
    part.step = j.at("step").get<uint64_t>();
    part.rank = j.at("rank").get<uint32_t>();
    part.world_size = j.at("world_size").get<uint32_t>();
    if (!j.at("shard").is_null())
      part.shard = ShardInfo{j.at("shard").at("file").get<std::string>(), j.at("shard").at("bytes").get<uint64_t>()};
    for (const auto& pj : j.at("pieces")) {
      PartPiece p;
      p.name = pj.at("name").get<std::string>();
      auto dtype = dtype_from_safetensors_name(pj.at("dtype").get<std::string>());
      if (!dtype) throw invalid_input("unknown dtype", where + ": tensor '" + p.name + "'");
      p.dtype = *dtype;
      for (const auto& d : pj.at("global_shape")) p.global_shape.push_back(d.get<int64_t>());
      p.replicated = pj.at("replicated").get<bool>();
      p.stored = pj.at("stored").get<bool>();
      p.slice = slice_from_json(pj.at("slice"), where);
      part.pieces.push_back(std::move(p));
    }
  } catch (const json::exception& e) {
    throw invalid_input(std::string("malformed rank part: ") + e.what(), where);
  }
  return part;
}

RankPart read_part(const io::DirFd& dir, uint32_t rank, uint64_t step) {
  const std::string name = part_file_name(rank);
  const std::string where = step_dir_name(step) + ": rank " + std::to_string(rank);
  io::Fd fd = dir.open_file(name, O_RDONLY);
  if (!fd.valid()) throw invalid_input("part " + name + " is missing (the rank did not finish its part)", where);
  RankPart part = part_decode(io::read_fd(fd.fd(), kMaxPartBytes, dir.child_path(name)), where);
  if (part.rank != rank || part.step != step) throw invalid_input("part " + name + " belongs to another rank or step", where);
  return part;
}

Manifest merge_parts(uint64_t step, const std::vector<RankPart>& parts, const std::vector<uint64_t>& part_bytes) {
  Manifest m;
  StepInfo& info = m.info;
  info.step = step;
  info.world_size = static_cast<uint32_t>(parts.size());
  struct Seen {
    size_t entry;
    uint32_t rank;
    bool replicated;
    const PartPiece* saved_replica = nullptr;
  };
  std::map<std::string, Seen> seen;
  std::vector<const PartPiece*> replicas;  // held but saved by another rank, checked last
  for (size_t r = 0; r < parts.size(); ++r) {
    const RankPart& part = parts[r];
    const std::string rank = "rank " + std::to_string(r);
    if (part.world_size != parts.size())
      throw usage_error(rank + " saved for " + std::to_string(part.world_size) + " ranks, the job has " +
                        std::to_string(parts.size()), step_dir_name(step));
    m.parts.push_back({part_file_name(static_cast<uint32_t>(r)), part_bytes[r]});
    if (part.shard) m.shards.push_back(*part.shard);
    for (const PartPiece& p : part.pieces) {
      const std::string where = step_dir_name(step) + ": tensor '" + p.name + "'";
      auto it = seen.find(p.name);
      if (it == seen.end()) {
        TensorEntry e;
        e.name = p.name;
        e.dtype = p.dtype;
        e.shape = p.global_shape;
        e.nbytes = dtype_storage_bytes(p.dtype, shape_numel(p.global_shape));
        e.encoding = "sliced";
        info.entries.push_back(std::move(e));
        it = seen.emplace(p.name, Seen{info.entries.size() - 1, static_cast<uint32_t>(r), p.replicated}).first;
      }
      const TensorEntry& e = info.entries[it->second.entry];
      const std::string first = "rank " + std::to_string(it->second.rank);
      if (p.dtype != e.dtype || p.global_shape != e.shape)
        throw usage_error(first + " saves it as " + dtype_name(e.dtype) + " " + shape_to_string(e.shape) + ", " + rank +
                              " as " + dtype_name(p.dtype) + " " + shape_to_string(p.global_shape),
                          where);
      if (p.replicated != it->second.replicated)
        throw usage_error((p.replicated ? rank : first) + " passes it replicated, " + (p.replicated ? first : rank) +
                              " as a slice",
                          where);
      if (p.stored) {
        if (p.replicated && it->second.saved_replica)
          throw internal_error("replicated tensor saved twice (by " + first + " and " + rank + ")", where);
        info.entries[it->second.entry].slices.push_back(p.slice);
        if (p.replicated) it->second.saved_replica = &p;
      } else {
        replicas.push_back(&p);
      }
    }
  }
  for (const PartPiece* p : replicas) {
    const Seen& s = seen.at(p->name);
    const std::string where = step_dir_name(step) + ": tensor '" + p->name + "'";
    if (!s.saved_replica) throw internal_error("replicated tensor saved by no rank", where);
    if (s.saved_replica->slice.xxh3 != p->slice.xxh3)
      throw usage_error("replicated tensor differs between rank " + std::to_string(s.saved_replica->slice.rank) +
                            " and rank " + std::to_string(p->slice.rank),
                        where);
  }
  for (const auto& e : info.entries) {
    check_sliced_entry(e, info.world_size, step_dir_name(step) + ": tensor '" + e.name + "'", ErrorKind::kUsage);
    info.logical_bytes += e.nbytes;
  }
  info.tensors = info.entries.size();
  return m;
}

Manifest step_manifest(uint64_t step, const std::vector<RankPart>& parts, const std::vector<uint64_t>& part_bytes) {
  Manifest m = merge_parts(step, parts, part_bytes);
  m.info.created = utc_now_iso8601();
  return m;
}

Manifest publish_parts(const io::DirFd& root, const std::string& tmp_name, uint64_t step, uint32_t world_size) {
  std::vector<uint8_t> bytes;
  Manifest m;
  try {
    std::optional<io::DirFd> tmp = root.open_dir(tmp_name);
    if (!tmp) throw invalid_input("temporary step directory is missing", root.child_path(tmp_name));
    std::vector<RankPart> parts;
    std::vector<uint64_t> part_bytes;
    for (uint32_t r = 0; r < world_size; ++r) {
      parts.push_back(read_part(*tmp, r, step));
      part_bytes.push_back(tmp->file_size(part_file_name(r)).value_or(0));
    }
    m = step_manifest(step, parts, part_bytes);
    bytes = manifest_encode(m);
  } catch (...) {
    fs::remove_tree(root, tmp_name);
    throw;
  }
  publish_step(root, tmp_name, step, bytes);
  return m;
}

}  // namespace tk::ckpt
