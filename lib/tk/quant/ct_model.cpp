#include "tk/quant/ct_model.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tk/core/error.h"
#include "tk/core/mapped_files.h"
#include "tk/core/json_parse_internal.h"
#include "tk/io/dir_fd.h"
#include "tk/io/stream.h"

namespace tk::quant {
namespace {

namespace fs = std::filesystem;

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
    check_mapped_files();  // a model quantized from a truncated input is not published
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

const char* entry_kind(io::EntryType type) {
  switch (type) {
    case io::EntryType::kSymlink: return "a symbolic link";
    case io::EntryType::kDirectory: return "a directory";
    case io::EntryType::kFile:
    case io::EntryType::kOther: break;
  }
  return "not a regular file";
}

// Copy regular file `name` of `from` into `to`, with its permission bits.
void copy_file(const io::DirFd& from, const io::DirFd& to, const std::string& name) {
  io::Fd in = from.open_file(name, O_RDONLY);
  if (!in.valid()) throw errno_error("cannot open", from.child_path(name), in.error());
  struct stat st {};
  if (::fstat(in.fd(), &st) != 0) throw errno_error("cannot stat", from.child_path(name), errno);
  io::Fd out = to.create_file(name, st.st_mode & 0777);
  std::vector<uint8_t> buffer(io::kMaxWriteCall);
  for (;;) {
    const ssize_t got = ::read(in.fd(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw errno_error("cannot read", from.child_path(name), errno);
    if (got == 0) break;
    io::write_fd(out.fd(), buffer.data(), static_cast<size_t>(got), to.child_path(name));
  }
  if (out.close() != 0) throw errno_error("cannot write", to.child_path(name), errno);
}

// Copy the side files of `source_dir` (tokenizer, generation config, ...: its entries
// other than config.json, weights and subdirectories) into `staging`: only regular
// files inside the directory, each opened without following a link and without
// blocking on a FIFO. A link (which may point anywhere: another user's file, a device)
// or any other kind of entry is not copied; returns those, as "NAME (WHAT)".
std::vector<std::string> copy_side_files(const std::string& source_dir, const fs::path& staging) {
  const io::DirFd from = io::DirFd::open(source_dir);
  const io::DirFd to = io::DirFd::open(staging.string());
  std::vector<std::string> skipped;
  for (const std::string& name : from.list()) {
    if (name == "config.json" || weight_file(name)) continue;
    const std::optional<io::EntryType> type = from.type(name);
    if (!type || *type == io::EntryType::kDirectory) continue;
    if (*type != io::EntryType::kFile) {
      skipped.push_back(name + " (" + entry_kind(*type) + ")");
      continue;
    }
    copy_file(from, to, name);
  }
  return skipped;
}

}  // namespace

std::string CtModelWritten::skipped_text() const {
  if (skipped.empty()) return {};
  constexpr size_t kShown = 8;
  std::string list;
  for (size_t i = 0; i < std::min(skipped.size(), kShown); ++i) list += (i ? ", " : "") + skipped[i];
  if (skipped.size() > kShown) list += fmt::format(" and {} more", skipped.size() - kShown);
  return "not copied into the model directory, which takes only regular files from the source directory: " + list;
}

std::string ct_module_of(const std::string& weight_name) {
  constexpr std::string_view kSuffix = ".weight";
  if (weight_name.size() <= kSuffix.size() || !weight_name.ends_with(kSuffix)) return {};
  return weight_name.substr(0, weight_name.size() - kSuffix.size());
}

std::string ct_source_directory(const std::string& input) {
  if (input.empty()) return {};
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
  if (dir.empty())
    throw usage_error("compressed-tensors output is a directory").with_option("quant.ct_output_directory");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st)) throw usage_error("exists and is not a directory", dir);
  if (!fs::is_empty(dir, ec)) throw usage_error("exists and is not empty; give a new or empty directory", dir);
}

std::string ct_model_config(std::string_view source_config, const CtConfig& ct) {
  std::string_view text = source_config.empty() ? std::string_view("{}") : source_config;
  // The source is checked (syntax, nesting depth) without being built: only whether it
  // already has a quantization_config matters, and its text is copied as it is.
  const std::optional<nlohmann::json> has = json_parse_object_members(text, "config.json", {"quantization_config"});
  if (!has) throw invalid_input("config.json is not a JSON object");
  if (!has->empty()) throw usage_error("the model's config.json already has a quantization_config");
  // Our own, small object, laid out as the usual two-space indented config.json.
  const std::string qc = nlohmann::ordered_json::parse(ct_quantization_config(ct)).dump(2);
  std::string out = json_object_append(text, "quantization_config", qc);
  if (out.back() != '\n') out += '\n';
  return out;
}

CtModelWritten ct_write_model(const std::string& dir, const std::string& source_dir,
                              const std::vector<CtOutput>& outputs, const io::Metadata& metadata,
                              const CtModelSources& sources) {
  ct_check_output_directory(dir);
  std::string source_config;
  fs::path source_config_path;
  if (!source_dir.empty()) {
    source_config_path = fs::path(source_dir) / "config.json";
    std::error_code ec;
    if (fs::is_regular_file(source_config_path, ec)) {
      source_config = read_config(source_config_path);
      if (source_config.empty()) throw invalid_input("empty; not a JSON object", source_config_path.string());
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
  std::string config;
  try {
    config = ct_model_config(source_config, ct);
  } catch (const Error& e) {
    throw e.with_context(source_config_path.string());
  }

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
    out->write(config.data(), config.size());
    out->commit();
  }
  CtModelWritten written;
  if (!source_dir.empty()) written.skipped = copy_side_files(source_dir, staging.path());
  staging.commit();
  written.weights = (fs::path(dir) / "model.safetensors").string();
  return written;
}

}  // namespace tk::quant
