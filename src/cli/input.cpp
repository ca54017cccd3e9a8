#include "cli/input.h"

#include <sys/stat.h>

#include <cerrno>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cli/option_hint.h"
#include "cli/path_args.h"
#include "tk/ckpt/step_tensors.h"
#include "tk/codec/tkz_reader.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"
#include "tk/io/temp_file.h"
#include "tk/store/store.h"

namespace tk::cli {

namespace {

// Warnings about skipped objects: one line per reason, naming a few of them, for this
// many reasons; a count for the rest (a file can hold millions).
constexpr size_t kSkippedExamples = 3;
constexpr size_t kSkippedReasons = 20;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// `e` with the temporary file's name `from` replaced by the stream's `to`.
Error renamed(const Error& e, const std::string& from, const std::string& to) {
  return Error(e.kind(), replace_all(e.message(), from, to), replace_all(e.where(), from, to)).with_option(e.option());
}

// A reader of a spooled copy whose errors name the original stream.
class SpooledReader final : public io::TensorReader {
 public:
  SpooledReader(std::unique_ptr<io::TensorReader> inner, std::string spool, std::string name)
      : inner_(std::move(inner)), spool_(std::move(spool)), name_(std::move(name)) {
    infos_ = inner_->tensors();
    metadata_ = inner_->metadata();
    skipped_ = inner_->skipped();
  }
  io::FileFormat format() const override { return inner_->format(); }
  bool random_access() const override { return true; }
  Tensor read(size_t index) override {
    return located([&] { return inner_->read(index); });
  }
  void release(size_t index) override { inner_->release(index); }
  void read_pieces(size_t index, size_t piece_bytes, const PieceSink& sink) override {
    located([&] {
      inner_->read_pieces(index, piece_bytes, sink);
      return 0;
    });
  }

 private:
  template <typename Fn> auto located(Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const Error& e) {
      throw renamed(e, spool_, name_);
    }
  }
  std::unique_ptr<io::TensorReader> inner_;
  std::string spool_, name_;
};

// io::open_reader, .tkz containers as the tensor files they hold, and checkpoint steps
// (a root: its newest step).
std::unique_ptr<io::TensorReader> open_any(const std::string& path, const io::ReadOptions& options) {
  if (!is_std_stream(path)) {  // the look-ups below are by path
    if (codec::is_tkz_file(path)) return std::make_unique<codec::TkzReader>(path);
    if (auto where = ckpt::locate_checkpoint(path)) return ckpt::open_step_tensors(*where);
    if (store::is_store_dir(path))
      throw invalid_input(
          "is a model store, not a tensor file: 'tinfo' lists it, 'tcompress store get' restores a file", path);
  }
  return open_tensor_file(path, options);
}

}  // namespace

void warn_skipped(const Tool& tool, const io::TensorReader& reader, const std::string& path) {
  // A name or reason may be as long as the file made it.
  auto shortened = [](const std::string& text, size_t most) {
    return text.size() <= most ? text : text.substr(0, most) + "...";
  };
  struct Group {
    std::vector<const io::SkippedObject*> examples;  // the first few
    uint64_t count = 0;
  };
  std::vector<std::string_view> order;
  std::unordered_map<std::string_view, Group> groups;
  for (const io::SkippedObject& s : reader.skipped()) {
    auto [it, fresh] = groups.try_emplace(s.reason);
    if (fresh) order.push_back(s.reason);
    if (it->second.examples.size() < kSkippedExamples) it->second.examples.push_back(&s);
    ++it->second.count;
  }
  const std::string file = " (" + cli::input_display_name(path) + ")";
  uint64_t rest = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const Group& g = groups[order[k]];
    if (k >= kSkippedReasons) {
      rest += g.count;
      continue;
    }
    const std::string reason = shortened(skipped_reason_text(std::string(order[k]), g.examples[0]->option), 200);
    if (g.count == 1) {
      tool.warning("skipped '" + shortened(g.examples[0]->name, 200) + "': " + reason + file);
      continue;
    }
    std::string names;
    for (const io::SkippedObject* s : g.examples) names += (names.empty() ? "'" : ", '") + shortened(s->name, 64) + "'";
    if (g.count > g.examples.size()) names += ", ...";
    tool.warning("skipped " + std::to_string(g.count) + " objects (" + names + "): " + reason + file);
  }
  if (rest > 0)
    tool.warning("skipped " + std::to_string(rest) + " more objects for " + std::to_string(order.size() - kSkippedReasons) +
                 " other reasons" + file);
}

std::unique_ptr<io::TensorReader> open_reader(const Tool& tool, const std::string& path,
                                              const io::ReadOptions& options) {
  auto reader = open_any(path, options);
  warn_skipped(tool, *reader, path);
  return reader;
}

std::unique_ptr<io::TensorReader> open_seekable_reader(const Tool& tool, const std::string& path,
                                                       const ReaderOpener& open) {
  struct stat st{};
  if (!is_std_stream(path) && ::stat(path.c_str(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
    if (!open) return open_reader(tool, path);
    auto reader = open(path);
    warn_skipped(tool, *reader, path);
    return reader;
  }
  auto in = open_input(path);
  const std::string name = in->name();
  io::TempFile spool;  // unlinked when it goes: the reader keeps its own descriptor
  if (!spool.create("tk-spool")) {
    throw errno_error("cannot create a temporary file", io::TempFile::directory(), errno);
  }
  io::copy_to_temp(*in, spool);
  const std::string copy = spool.path();
  std::unique_ptr<io::TensorReader> inner;
  try {
    inner = open ? open(copy) : open_any(copy, {});
  } catch (const Error& e) {
    throw renamed(e, copy, name);
  }
  auto reader = std::make_unique<SpooledReader>(std::move(inner), copy, name);
  warn_skipped(tool, *reader, path);
  return reader;
}

}  // namespace tk::cli
