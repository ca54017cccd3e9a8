#include "tk/ckpt/step_tensors.h"

#include <sys/stat.h>

#include <filesystem>

#include "tk/ckpt/manifest.h"
#include "tk/ckpt/step_reader.h"
#include "tk/core/error.h"

namespace tk::ckpt {

namespace {

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool entry_exists(const std::filesystem::path& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

class StepTensors final : public io::TensorReader {
 public:
  StepTensors(const std::string& root, uint64_t step) : reader_(root, step) {
    reader_.require_parts();  // a step whose parts disagree with its manifest is damaged
    const StepInfo& info = reader_.manifest().info;
    for (const TensorEntry& e : info.entries) infos_.push_back({e.name, e.dtype, e.shape, e.nbytes});
    metadata_ = info.metadata;
  }
  io::FileFormat format() const override { return io::FileFormat::kCheckpoint; }
  bool random_access() const override { return true; }
  Tensor read(size_t index) override {
    const TensorEntry& e = reader_.manifest().info.entries.at(index);
    Tensor t = Tensor::empty(e.dtype, e.shape);
    reader_.read(e, {t.mutable_data(), e.nbytes});
    return t;
  }

 private:
  StepReader reader_;
};

}  // namespace

std::optional<CheckpointPath> locate_checkpoint(const std::string& path) {
  if (!is_directory(path)) return std::nullopt;
  namespace fs = std::filesystem;
  // Trailing slashes and "." name the directory itself.
  const fs::path dir = fs::path(path).lexically_normal();
  const fs::path named = dir.has_filename() ? dir : dir.parent_path();
  if (auto step = parse_step_dir_name(named.filename().string()); step && entry_exists(named / kManifestName)) {
    const fs::path root = named.parent_path();
    return CheckpointPath{root.empty() ? "." : root.string(), step};
  }
  if (entry_exists(dir / "latest") || entry_exists(dir / ".lock") || !committed_steps(path).empty())
    return CheckpointPath{path, std::nullopt};
  return std::nullopt;
}

std::unique_ptr<io::TensorReader> open_step_tensors(const std::string& root, uint64_t step) {
  return std::make_unique<StepTensors>(root, step);
}

std::unique_ptr<io::TensorReader> open_step_tensors(const CheckpointPath& where) {
  if (where.step) return open_step_tensors(where.root, *where.step);
  std::vector<uint64_t> steps = committed_steps(where.root);
  if (steps.empty()) throw invalid_input("no committed step in this checkpoint directory", where.root);
  return open_step_tensors(where.root, steps.back());
}

}  // namespace tk::ckpt
