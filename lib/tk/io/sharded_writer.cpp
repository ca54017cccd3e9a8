// Writing a model as safetensors shards plus the index that transformers and
// huggingface_hub read (sharded.h).
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tk/core/error.h"
#include "tk/io/safetensors.h"
#include "tk/io/sharded.h"
#include "tk/io/stream.h"

namespace tk::io {

namespace {

namespace fs = std::filesystem;

// The shards of `infos` in declared order: a new shard starts when the next tensor would
// take the current one past `max_bytes` (a tensor larger than that gets a shard alone),
// as huggingface_hub's split_state_dict_into_shards_factory assigns them.
std::vector<std::vector<size_t>> plan_shards(const std::vector<TensorInfo>& infos, uint64_t max_bytes) {
  std::vector<std::vector<size_t>> shards(1);
  uint64_t used = 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (!shards.back().empty() && used + infos[i].nbytes > max_bytes) {
      shards.emplace_back();
      used = 0;
    }
    shards.back().push_back(i);
    used += infos[i].nbytes;
  }
  return shards;
}

class ShardedWriter final : public TensorWriter {
 public:
  ShardedWriter(std::string path, const ShardedWriteOptions& options) : path_(std::move(path)), options_(options) {}

  std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata& metadata) override {
    const std::vector<std::vector<size_t>> plan = plan_shards(infos, options_.max_shard_bytes);
    const fs::path target(path_);
    const std::string file = target.filename().string();
    const std::string stem = file.substr(0, file.size() - std::string(".safetensors").size());
    std::vector<std::string> paths;
    if (plan.size() == 1) {
      paths.push_back(path_);  // fits one shard: the plain file, as transformers writes it
    } else {
      for (size_t s = 0; s < plan.size(); ++s)
        paths.push_back((target.parent_path() / fmt::format("{}-{:05d}-of-{:05d}.safetensors", stem, s + 1,
                                                            plan.size())).string());
      index_path_ = (target.parent_path() / (stem + ".safetensors.index.json")).string();
    }
    // Every name is checked before any is opened: a shard name that is a link, a FIFO
    // or a device is refused even with `replace`, and nothing is left behind for it.
    std::vector<std::string> outputs = paths;
    if (!index_path_.empty()) outputs.push_back(index_path_);
    for (const std::string& p : outputs) {
      const OutputTarget t = output_target(p, file_options());
      if (t != OutputTarget::kAbsent && !options_.replace)
        throw usage_error("the output exists", p).with_option("io.output_exists");
    }
    // The shards go into a directory of their own, created as transformers'
    // save_pretrained creates it (with its missing parents).
    if (const fs::path dir = target.parent_path(); !dir.empty()) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw errno_error("cannot create the output directory", dir.string(), ec.value());
    }
    where_.resize(infos.size());
    std::vector<size_t> order;
    for (size_t s = 0; s < plan.size(); ++s) {
      std::vector<TensorInfo> shard_infos;
      for (size_t k = 0; k < plan[s].size(); ++k) {
        shard_infos.push_back(infos[plan[s][k]]);
        where_[plan[s][k]] = {s, k};
        weight_map_[infos[plan[s][k]].name] = fs::path(paths[s]).filename().string();
        total_bytes_ += infos[plan[s][k]].nbytes;
      }
      shards_.push_back(safetensors_writer(OutputStream::open(paths[s], file_options())));
      for (size_t local : shards_.back()->begin(shard_infos, metadata)) order.push_back(plan[s][local]);
    }
    return order;
  }

  void write(size_t index, const Tensor& tensor) override {
    const auto [s, local] = place(index);
    shards_[s]->write(local, tensor);
  }
  bool begin_pieces(size_t index) override {
    const auto [s, local] = place(index);
    if (!shards_[s]->begin_pieces(local)) return false;
    current_ = s;
    return true;
  }
  void write_piece(std::span<const uint8_t> bytes) override { shards_[current_]->write_piece(bytes); }
  void end_pieces() override { shards_[current_]->end_pieces(); }

  // Every shard is complete before the index names it: a reader that finds the index
  // finds its shards.
  void finish() override {
    for (auto& shard : shards_) shard->finish();
    if (index_path_.empty()) return;
    nlohmann::json weight_map = nlohmann::json::object();
    for (const auto& [name, file] : weight_map_) weight_map[name] = file;
    const nlohmann::json index = {{"metadata", {{"total_size", total_bytes_}}}, {"weight_map", weight_map}};
    const std::string text = index.dump(2) + "\n";
    auto out = OutputStream::open(index_path_, file_options());
    out->write(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    out->commit();
  }

 private:
  // The shards and the index are names this writer makes up: regular files or nothing.
  OutputOptions file_options() const { return {.durable = options_.durable, .special_files = false}; }

  std::pair<size_t, size_t> place(size_t index) const {
    if (index >= where_.size()) throw internal_error("tensor index out of range", path_);
    return where_[index];
  }

  std::string path_, index_path_;
  ShardedWriteOptions options_;
  std::vector<std::unique_ptr<TensorWriter>> shards_;
  std::vector<std::pair<size_t, size_t>> where_;  // tensor -> (shard, index in the shard)
  std::map<std::string, std::string> weight_map_;  // sorted by name, as transformers writes it
  uint64_t total_bytes_ = 0;
  size_t current_ = 0;
};

}  // namespace

std::unique_ptr<TensorWriter> sharded_writer(const std::string& path, const ShardedWriteOptions& options) {
  if (!path.ends_with(".safetensors"))
    throw usage_error("sharded output needs a file name ending in .safetensors (the shards are named from it)", path);
  if (options.max_shard_bytes == 0) throw usage_error("the shard size must be positive", path);
  return std::make_unique<ShardedWriter>(path, options);
}

}  // namespace tk::io
