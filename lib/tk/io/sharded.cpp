#include "tk/io/sharded.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>

#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"
#include "tk/io/safetensors.h"

namespace tk::io {

namespace {

using nlohmann::json;

// An index lists one entry per tensor; even very large models stay far below this.
constexpr uint64_t kShardIndexMaxBytes = 100'000'000;

struct ShardIndex {
  Metadata metadata;
  std::map<std::string, std::string> weight_map;  // tensor -> shard file name
};

// A name from the file, quoted for a message, long names shortened. The bytes are kept
// as they are: the tools escape every message they print (src/cli/display_text.h).
std::string quote_name(std::string_view name) {
  constexpr size_t kMax = 200;
  std::string out = "'";
  out.append(name.substr(0, std::min(name.size(), kMax)));
  if (name.size() > kMax) out += "...";
  return out + "'";
}

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// Shards must be files in the index's own directory: an index must not be able to
// point a reader at arbitrary files ("../../etc/passwd", "/dev/zero").
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

ShardIndex parse_index(const std::string& index_path) {
  const Buffer bytes = read_small_file(index_path, kShardIndexMaxBytes,
                                      "shard index larger than " + std::to_string(kShardIndexMaxBytes) + " bytes");
  json j = json_parse({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, "shard index", index_path);

  if (!j.is_object()) throw invalid_input("malformed shard index: not a JSON object", index_path);
  ShardIndex index;
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object())
    throw invalid_input("malformed shard index: no \"weight_map\" object", index_path);
  if (wm->empty()) throw invalid_input("malformed shard index: \"weight_map\" is empty", index_path);
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      throw invalid_input("malformed shard index: shard of tensor " + quote_name(tensor) + " is not a string", index_path);
    const auto& file = shard.get_ref<const std::string&>();
    if (!plain_file_name(file))
      throw invalid_input("shard " + quote_name(file) + " of tensor " + quote_name(tensor) +
                              " is not a plain file name in the index's directory",
                          index_path);
    index.weight_map.emplace(tensor, file);
  }
  auto md = j.find("metadata");
  if (md != j.end() && !md->is_null()) {
    if (!md->is_object()) throw invalid_input("malformed shard index: \"metadata\" is not an object", index_path);
    // Strings as they are; numbers (total_size) and anything else as compact JSON text.
    for (const auto& [key, value] : md->items())
      index.metadata[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return index;
}

std::unique_ptr<TensorReader> open_shard(const std::string& index_path, const std::string& file,
                                         const ReadOptions& options) {
  std::string path = join_path(directory_of(index_path), file);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
    throw invalid_input("shard " + quote_name(file) + " listed in the index does not exist", index_path);
  try {
    auto in = InputStream::open(path, {.pipes = false});  // a planted FIFO is refused, not waited on
    if (detect_format(*in) != FileFormat::kSafetensors) throw invalid_input("shard is not a safetensors file");
    return safetensors_open(std::move(in), options);
  } catch (const Error& e) {
    if (e.where().rfind(path, 0) == 0) throw;
    throw e.with_context(path);
  }
}

class ShardedReader final : public TensorReader {
 public:
  ShardedReader(const std::string& index_path, const ReadOptions& options) {
    ShardIndex index = parse_index(index_path);
    // Distinct shards, sorted by file name (model-00001-of-00003 ... come in order).
    std::vector<std::string> files;
    for (const auto& [tensor, file] : index.weight_map) files.push_back(file);
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());

    std::map<std::string, size_t> owner;  // tensor -> shard holding it
    for (size_t s = 0; s < files.size(); ++s) {
      shards_.push_back(open_shard(index_path, files[s], options));
      for (const auto& t : shards_[s]->tensors()) {
        auto [it, fresh] = owner.emplace(t.name, s);
        if (!fresh)
          throw invalid_input("tensor " + quote_name(t.name) + " is stored in both shard " + quote_name(files[it->second]) +
                                  " and shard " + quote_name(files[s]),
                              index_path);
      }
    }
    for (const auto& [tensor, file] : index.weight_map) {
      auto it = owner.find(tensor);
      if (it == owner.end() || files[it->second] != file)
        throw invalid_input("tensor " + quote_name(tensor) + " listed in the index is missing from shard " + quote_name(file),
                            index_path);
    }
    // Shard by shard, each in its storage order. Tensors a shard holds but the index
    // does not list are left out, as the reference loader ignores them.
    for (size_t s = 0; s < shards_.size(); ++s) {
      const auto& infos = shards_[s]->tensors();
      for (size_t i = 0; i < infos.size(); ++i) {
        if (!index.weight_map.count(infos[i].name)) continue;
        infos_.push_back(infos[i]);
        locations_.push_back({s, i});
      }
    }
    // The index's metadata wins over the shards', an earlier shard's over a later one's.
    metadata_ = std::move(index.metadata);
    for (const auto& shard : shards_) metadata_.insert(shard->metadata().begin(), shard->metadata().end());
  }

  FileFormat format() const override { return FileFormat::kShardIndex; }

  bool random_access() const override {
    return std::all_of(shards_.begin(), shards_.end(), [](const auto& s) { return s->random_access(); });
  }

  Tensor read(size_t index) override {
    if (index >= locations_.size())
      throw internal_error("tensor index " + std::to_string(index) + " out of range");
    auto [shard, i] = locations_[index];
    return shards_[shard]->read(i);
  }

  void release(size_t index) override {
    if (index >= locations_.size()) return;
    auto [shard, i] = locations_[index];
    shards_[shard]->release(i);
  }

  std::vector<Metadata> shard_metadata() const {
    std::vector<Metadata> out;
    for (const auto& shard : shards_) out.push_back(shard->metadata());
    return out;
  }

 private:
  std::vector<std::unique_ptr<TensorReader>> shards_;
  std::vector<std::pair<size_t, size_t>> locations_;  // (shard, index in shard) per tensor
};

}  // namespace

std::vector<Metadata> sharded_shard_metadata(const TensorReader& reader) {
  const auto* sharded = dynamic_cast<const ShardedReader*>(&reader);
  return sharded ? sharded->shard_metadata() : std::vector<Metadata>{};
}

namespace {

std::string list_names(const std::vector<std::string>& names) {
  constexpr size_t kMaxListed = 10;
  std::string s;
  for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > kMaxListed) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::unique_ptr<TensorReader> sharded_open(const std::string& index_path, const ReadOptions& options) {
  return std::make_unique<ShardedReader>(index_path, options);
}

std::string sharded_find_in_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> indexes, files;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;  // follows symlinks (Hugging Face caches)
    std::string name = it->path().filename().string();
    if (ends_with(name, ".safetensors.index.json")) indexes.push_back(name);
    else if (ends_with(name, ".safetensors")) files.push_back(name);
  }
  if (ec) throw errno_error("failed to list directory", dir, ec.value());
  std::sort(indexes.begin(), indexes.end());
  std::sort(files.begin(), files.end());
  if (indexes.size() == 1) return join_path(dir, indexes[0]);
  if (indexes.size() > 1)
    throw invalid_input("several shard indexes in directory: " + list_names(indexes) + "; open one by path", dir);
  if (files.size() == 1) return join_path(dir, files[0]);
  if (files.size() > 1)
    throw invalid_input("several .safetensors files and no index in directory: " + list_names(files) +
                            "; open one by path",
                        dir);
  throw invalid_input("no *.safetensors.index.json or *.safetensors file in directory", dir);
}

}  // namespace tk::io
