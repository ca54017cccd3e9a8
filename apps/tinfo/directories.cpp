// `tinfo DIR` for the directories the tools write: a checkpoint root (its steps) and a
// model store (its files). A checkpoint step (DIR/step-N) is a tensor file like any other.
#include <fmt/format.h>

#include "cli/directory_listing.h"
#include "cli/display_text.h"
#include "cli/metadata_text.h"
#include "cli/number_format.h"
#include "cli/path_args.h"
#include "tinfo.h"
#include "tk/ckpt/step_tensors.h"

namespace tk::tinfo {

namespace {

using nlohmann::json;

// --stats and --parts read tensors, which a directory listing does not.
void refuse_tensor_flags(const ListOptions& options, const std::string& path, const std::string& hint) {
  const char* flag = options.stats ? "--stats" : options.parts ? "--parts" : nullptr;
  if (flag) throw usage_error(std::string(flag) + " reads tensors; " + hint, path);
}

Listing list_checkpoint(const std::string& path, const ListOptions& options, bool with_json) {
  refuse_tensor_flags(options, path, "this is a checkpoint directory: give one of its steps (DIR/step-N)");
  ckpt::Options read_only;
  read_only.read_only = true;
  auto ck = ckpt::Checkpointer::open(path, read_only);
  std::vector<ckpt::StepListing> steps = ck->list_each();
  Listing listing;
  cli::DirectoryTable listed = cli::step_table(steps, {}, listing.errors);
  uint64_t stored = 0;
  for (const auto& s : steps)
    if (s.info) stored += s.info->stored_bytes;
  std::string newest = steps.empty() ? "" : fmt::format(", newest step-{}", steps.back().step);
  listing.text = fmt::format("{}: checkpoint, {}{}, {} stored\n", cli::escape_text(path),
                             cli::count_noun(steps.size(), "step", "steps"), newest, cli::format_bytes(stored));
  if (!steps.empty()) listing.text += listed.table.render();
  if (options.metadata) {
    for (const auto& s : steps) {
      if (!s.info) continue;
      listing.text += fmt::format("step-{} metadata:{}\n", s.step, s.info->metadata.empty() ? " none" : "");
      listing.text += cli::metadata_lines(s.info->metadata);
    }
  }
  if (with_json)
    listing.doc = {{"path", path}, {"format", "checkpoint"}, {"stored_bytes", stored}, {"steps", listed.rows}};
  return listing;
}

Listing list_store(const std::string& path, const ListOptions& options, bool with_json) {
  refuse_tensor_flags(options, path, "this is a model store: restore a file with 'tcompress store get'");
  store::StoreStats st = store::Store::open(path, false).stats();
  cli::DirectoryTable listed = cli::store_table(st);
  Listing listing;
  listing.text = fmt::format("{}: model store, {}, {} in files, {} stored, ratio {}\n", cli::escape_text(path),
                             cli::count_noun(st.files.size(), "file", "files"), cli::format_bytes(st.logical_bytes),
                             cli::format_bytes(st.stored_bytes()),
                             cli::ratio_text(st.logical_bytes, st.stored_bytes()));
  if (!st.files.empty()) listing.text += listed.table.render();
  if (st.unreferenced_objects)
    listing.text += fmt::format("{} unreferenced ({}): 'tcompress store gc' removes them\n",
                                cli::count_noun(st.unreferenced_objects, "object", "objects"),
                                cli::format_bytes(st.unreferenced_bytes));
  if (st.missing_objects || st.bad_objects)
    listing.text += fmt::format("damaged: {} missing, {} with a bad header: run 'tcompress store verify'\n",
                                st.missing_objects, st.bad_objects);
  if (with_json)
    listing.doc = {{"path", path},
                   {"format", "store"},
                   {"logical_bytes", st.logical_bytes},
                   {"stored_bytes", st.stored_bytes()},
                   {"ratio", cli::ratio_json(st.logical_bytes, st.stored_bytes())},
                   {"missing_objects", st.missing_objects},
                   {"bad_objects", st.bad_objects},
                   {"files", listed.rows}};
  return listing;
}

}  // namespace

std::optional<Listing> list_directory(const std::string& path, const ListOptions& options, bool with_json) {
  if (cli::is_std_stream(path)) return std::nullopt;
  if (auto where = ckpt::locate_checkpoint(path); where && !where->step)
    return list_checkpoint(path, options, with_json);
  if (store::is_store_dir(path)) return list_store(path, options, with_json);
  return std::nullopt;
}

}  // namespace tk::tinfo
