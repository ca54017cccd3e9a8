#include "tk/ckpt/shard_writer.h"

#include "tk/ckpt/fileops.h"
#include "tk/core/endian.h"
#include "tk/io/safetensors.h"

namespace tk::ckpt {

WrittenShard write_shard(const io::DirFd& dir, const std::string& name, const std::vector<ShardItem>& items,
                         const Metadata& metadata, uint64_t data_alignment) {
  std::vector<io::TensorInfo> infos;
  infos.reserve(items.size());
  for (const auto& item : items) infos.push_back(item.info);
  io::Metadata meta(metadata.begin(), metadata.end());
  std::vector<size_t> order = io::safetensors_canonical_order(infos);
  std::vector<io::TensorInfo> ordered;
  for (size_t k : order) ordered.push_back(infos[k]);
  std::vector<uint8_t> header = io::safetensors_make_header(ordered, meta);
  header.resize(header.size() + (data_alignment - (8 + header.size()) % data_alignment) % data_alignment, ' ');
  // The file starts with the header's length, 8 bytes little-endian.
  const uint64_t header_bytes = header.size();
  header.insert(header.begin(), 8, 0);
  store_le(header.data(), header_bytes);
  fs::File file = fs::create_file(dir, name);
  fs::StreamWriter out_file(file);
  out_file.append(header);
  WrittenShard out;
  out.offsets.resize(items.size());
  uint64_t offset = header.size();
  for (size_t k : order) {
    out.offsets[k] = offset;
    out_file.append(items[k].bytes);
    offset += items[k].bytes.size();
  }
  out_file.finish();
  out.bytes = offset;
  return out;
}

}  // namespace tk::ckpt
