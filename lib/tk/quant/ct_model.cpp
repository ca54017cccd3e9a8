#include "tk/quant/ct_model.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <sys/stat.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::quant {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

constexpr uint64_t kMaxConfigBytes = 16 << 20;

// config.json's text.
std::string read_config(const fs::path& path) {
  const Buffer bytes = io::read_small_file(path.string(), kMaxConfigBytes, "larger than 16 MiB; not a model config");
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

bool weight_file(const std::string& name) {
  for (const char* ext : {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".hdf5", ".npz", ".index.json"})
    if (name.ends_with(ext)) return true;
  return false;
}

// A temporary directory beside the target, removed unless committed.
class StagingDirectory {
 public:
  // "DIR/" names DIR too: the staging directory goes beside it, not inside.
  explicit StagingDirectory(const fs::path& target) : target_(target.lexically_normal()) {
    if (!target_.has_filename() && target_.has_relative_path()) target_ = target_.parent_path();
    const fs::path parent = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
    std::string pattern = (parent / ("." + target_.filename().string() + ".tk-tmp-XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) throw errno_error("cannot create a temporary directory", parent.string(), errno);
    path_ = pattern;
    // mkdtemp makes it private (0700); the model directory gets what mkdir would give it.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    std::error_code ec;
    fs::permissions(path_, static_cast<fs::perms>(0777 & ~mask), ec);
  }
  ~StagingDirectory() {
    std::error_code ec;
    if (!committed_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void commit() {
    std::error_code ec;
    if (fs::is_directory(target_, ec)) fs::remove(target_, ec);  // empty: checked before
    if (std::rename(path_.c_str(), target_.c_str()) != 0) {
      throw errno_error("cannot rename the finished directory into place", target_.string(), errno);
    }
    committed_ = true;
  }

 private:
  fs::path target_, path_;
  bool committed_ = false;
};

}  // namespace

std::string ct_module_of(const std::string& weight_name) {
  constexpr std::string_view kSuffix = ".weight";
  if (weight_name.size() <= kSuffix.size() || !weight_name.ends_with(kSuffix)) return {};
  return weight_name.substr(0, weight_name.size() - kSuffix.size());
}

std::string ct_source_directory(const std::string& input) {
  if (input.empty() || input == "-") return {};
  std::error_code ec;
  if (fs::is_directory(input, ec)) return input;
  // A file's directory is the model's only when it holds the model's config.json: a
  // weights file in a downloads folder does not bring the folder along.
  const fs::path parent = fs::path(input).parent_path().empty() ? fs::path(".") : fs::path(input).parent_path();
  return fs::is_regular_file(parent / "config.json", ec) ? parent.string() : std::string();
}

std::optional<CtConfig> ct_config_at(const std::string& path) {
  const std::string dir = ct_source_directory(path);
  if (dir.empty()) return std::nullopt;
  const fs::path config = fs::path(dir) / "config.json";
  std::error_code ec;
  if (!fs::is_regular_file(config, ec)) return std::nullopt;
  try {
    return ct_config_parse(read_config(config));
  } catch (const Error& e) {
    throw e.with_context(config.string());
  }
}

void ct_check_output_directory(const std::string& dir) {
  if (dir.empty() || dir == "-") throw usage_error("compressed-tensors output is a directory; give -o DIR");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st)) throw usage_error("exists and is not a directory", dir);
  if (!fs::is_empty(dir, ec)) throw usage_error("exists and is not empty; give a new or empty directory", dir);
}

std::string ct_write_model(const std::string& dir, const std::string& source_dir, const std::vector<CtOutput>& outputs,
                           const io::Metadata& metadata, const CtModelSources& sources) {
  ct_check_output_directory(dir);
  ordered_json config = ordered_json::object();
  if (!source_dir.empty()) {
    const fs::path source_config = fs::path(source_dir) / "config.json";
    std::error_code ec;
    if (fs::is_regular_file(source_config, ec)) {
      config = ordered_json::parse(read_config(source_config), nullptr, false);
      if (config.is_discarded() || !config.is_object()) {
        throw invalid_input("not a JSON object", source_config.string());
      }
      if (config.contains("quantization_config")) {
        throw usage_error("the model's config.json already has a quantization_config", source_config.string());
      }
    }
  }

  // The stored tensors: each dense output, each quantized one's parameters.
  std::vector<io::TensorInfo> infos;
  std::vector<std::pair<size_t, size_t>> slot;  // stored tensor -> (output, parameter index)
  std::map<CtScheme, std::vector<std::string>> targets;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const CtOutput& o = outputs[k];
    if (!o.scheme) {
      infos.push_back(o.dense);
      slot.emplace_back(k, 0);
      continue;
    }
    const std::string module = ct_module_of(o.dense.name);
    if (module.empty() || o.shape.size() != 2) {
      throw internal_error("compressed-tensors output '" + o.dense.name + "' is not a 2-D MODULE.weight");
    }
    targets[*o.scheme].push_back(module);
    const std::vector<std::string> names = ct_param_names(*o.scheme);
    const auto layouts = ct_param_layouts(*o.scheme, o.shape[0], o.shape[1], o.scale_dtype);
    for (size_t p = 0; p < names.size(); ++p) {
      const auto& [dtype, shape] = layouts[p];
      infos.push_back({module + "." + names[p], dtype, shape, dtype_storage_bytes(dtype, shape_numel(shape))});
      slot.emplace_back(k, p);
    }
  }
  CtConfig ct;
  for (auto& [scheme, modules] : targets) ct.groups.push_back({scheme, std::move(modules)});
  config["quantization_config"] = ordered_json::parse(ct_quantization_config(ct));

  StagingDirectory staging{fs::path(dir)};
  io::Metadata meta = metadata;
  meta["format"] = "pt";  // transformers refuses safetensors files without it
  io::WriteOptions options;
  options.format = io::FileFormat::kSafetensors;
  const std::string weights = (staging.path() / "model.safetensors").string();
  auto writer = io::open_writer(weights, options);
  // The writer's order groups tensors by dtype, so a module's parameters are apart: each
  // is made when its turn comes, and memory stays at one parameter.
  std::vector<int> pending(outputs.size(), 0);
  for (const auto& [k, p] : slot) ++pending[k];
  for (size_t i : writer->begin(infos, meta)) {
    const auto [k, p] = slot[i];
    if (!outputs[k].scheme) {
      writer->write(i, sources.dense(k));
    } else {
      const CtScheme& s = *outputs[k].scheme;
      writer->write(i, ct_param(sources.quantized(k), s, ct_param_names(s)[p]));
    }
    if (--pending[k] == 0 && sources.release) sources.release(k);
  }
  writer->finish();

  {
    auto out = io::OutputStream::open((staging.path() / "config.json").string());
    const std::string text = config.dump(2) + "\n";
    out->write(text.data(), text.size());
    out->commit();
  }
  if (!source_dir.empty()) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(source_dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name == "config.json" || weight_file(name) || !e.is_regular_file(ec)) continue;
      if (!fs::copy_file(e.path(), staging.path() / name, ec)) {
        throw io_error("cannot copy into the model directory: " + ec.message(), e.path().string());
      }
    }
    if (ec) throw io_error("cannot list: " + ec.message(), source_dir);
  }
  staging.commit();
  return (fs::path(dir) / "model.safetensors").string();
}

}  // namespace tk::quant
