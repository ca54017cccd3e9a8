// tcompress store add / get / ls / rm / gc / stats / verify: the deduplicating model store.
#include "store.h"

#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/directory_listing.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tk/store/store.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::tcompress {

struct StoreCommand {
  CLI::App* store = nullptr;
  CLI::App* add = nullptr;
  CLI::App* get = nullptr;
  CLI::App* ls = nullptr;
  CLI::App* rm = nullptr;
  CLI::App* gc = nullptr;
  CLI::App* stats = nullptr;
  CLI::App* verify = nullptr;

  std::string dir;                  // --store DIR
  std::vector<std::string> inputs;  // add FILE...
  std::string name;                 // add --name, get NAME
  std::string base;                 // add --base NAME
  bool no_delta = false;            // add --no-delta
  bool replace = false;             // add --replace
  std::string output = "-";         // get -o
  std::vector<std::string> names;   // rm NAME...
  bool repair = false;              // verify --repair
};

namespace {

using nlohmann::json;

CLI::App* add_store_subcommand(cli::Tool& tool, StoreCommand& c, const std::string& name,
                               const std::string& description) {
  CLI::App* sub = c.store->add_subcommand(name, description);
  sub->set_help_flag("-h,--help", "Print this help");
  cli::add_common_options(*sub, tool.options());
  sub->add_option("--store", c.dir, "Store directory (default: $TK_STORE)")
      ->type_name("DIR")
      ->envname("TK_STORE")
      ->required();
  return sub;
}

int run_add(cli::Tool& tool, const StoreCommand& c) {
  if (std::count(c.inputs.begin(), c.inputs.end(), "-") > 1) throw usage_error("standard input can be read only once");
  if (c.add->count("--name") > 0 && c.name.empty()) throw usage_error("--name needs a non-empty NAME");
  if (!c.name.empty() && c.inputs.size() > 1) throw usage_error("--name needs exactly one FILE");
  cli::check_binary_input(c.inputs, cli::stdin_is_terminal());
  store::Store store = store::Store::open(c.dir, true);
  store::StoreAddOptions options;
  options.name = c.name;
  options.base = c.base;
  options.deltas = !c.no_delta;
  options.replace = c.replace;
  options.lossless.threads = tool.options().threads;
  json rows = json::array();
  for (const std::string& input : c.inputs) {
    store::StoreAddResult r;
    try {
      r = cli::is_std_stream(input) ? store.add(io::InputStream::standard_input(), options) : store.add(input, options);
    } catch (const Error& e) {
      throw e.with_context(cli::input_display_name(input));
    }
    for (const std::string& why : r.replaced_objects) tool.warning("replaced a corrupt stored object: " + why);
    std::string detail =
        r.safetensors
            ? fmt::format("{} ({} new, {} already stored, {} as BitX deltas{})",
                          cli::count_noun(r.tensors, "tensor", "tensors"), r.tensors_plain + r.tensors_delta,
                          r.tensors_existing, r.tensors_delta,
                          r.base.empty() ? "" : fmt::format(" against {}, {:.3f} of bits equal", r.base, r.base_similarity))
            : std::string("opaque file");
    tool.summary(fmt::format("{} {}: {}, {}, wrote {}", r.replaced ? "replaced" : "added", r.name, detail,
                             cli::format_bytes(r.logical_bytes), cli::format_bytes(r.written_bytes)));
    rows.push_back({{"name", r.name},
                    {"replaced", r.replaced},
                    {"kind", r.safetensors ? "safetensors" : "opaque"},
                    {"logical_bytes", r.logical_bytes},
                    {"written_bytes", r.written_bytes},
                    {"tensors", r.tensors},
                    {"tensors_existing", r.tensors_existing},
                    {"tensors_plain", r.tensors_plain},
                    {"tensors_delta", r.tensors_delta},
                    {"base", r.base.empty() ? json(nullptr) : json(r.base)},
                    {"base_similarity", r.base.empty() ? json(nullptr) : json(r.base_similarity)}});
  }
  if (tool.options().json) cli::write_json({{"store", c.dir}, {"added", rows}}, *tool.options().json);
  return cli::kExitOk;
}

int run_get(cli::Tool& tool, const StoreCommand& c) {
  tool.check_output(c.output);
  store::Store store = store::Store::open(c.dir, false);
  if (!store.contains(c.name)) throw invalid_input("no file named '" + c.name + "' in the store", c.dir);
  auto out = cli::open_output(c.output);
  store::StoreGetResult r = store.get(c.name, *out, tool.options().threads);
  out->commit();
  tool.summary(fmt::format("{}: {} restored, SHA-256 {} verified", c.name, cli::format_bytes(r.bytes), r.sha256));
  if (tool.options().json)
    cli::write_json({{"store", c.dir}, {"name", c.name}, {"output", c.output}, {"bytes", r.bytes}, {"sha256", r.sha256}},
                    *tool.options().json);
  return cli::kExitOk;
}

int run_ls(cli::Tool& tool, const StoreCommand& c) {
  store::Store store = store::Store::open(c.dir, false);
  cli::DirectoryTable listed = cli::store_table(store.stats());
  if (tool.options().text_report()) cli::write_stdout(listed.table.render());
  if (tool.options().json) cli::write_json({{"store", c.dir}, {"files", listed.rows}}, *tool.options().json);
  return cli::kExitOk;
}

int run_stats(cli::Tool& tool, const StoreCommand& c) {
  store::Store store = store::Store::open(c.dir, false);
  store::StoreStats st = store.stats();
  cli::TextTable table({"NAME", "SIZE", "STORED", "UNIQUE", "RATIO"});
  json rows = json::array();
  for (const auto& f : st.files) {
    table.add_row({f.name, cli::format_bytes(f.logical_bytes), cli::format_bytes(f.stored_bytes),
                   cli::format_bytes(f.unique_bytes), cli::ratio_text(f.logical_bytes, f.stored_bytes)});
    rows.push_back(cli::store_file_json(f));
  }
  table.add_row({"(store)", cli::format_bytes(st.logical_bytes), cli::format_bytes(st.stored_bytes()), "-",
                 cli::ratio_text(st.logical_bytes, st.stored_bytes())});
  if (tool.options().text_report()) {
    std::string text = table.render();
    text += fmt::format("{}, {} ({} in objects, {} in manifests)\n", cli::count_noun(st.files.size(), "file", "files"),
                        cli::count_noun(st.objects, "object", "objects"), cli::format_bytes(st.object_bytes),
                        cli::format_bytes(st.manifest_bytes));
    if (st.unreferenced_objects)
      text += fmt::format("{} unreferenced ({}): run gc\n",
                          cli::count_noun(st.unreferenced_objects, "object", "objects"),
                          cli::format_bytes(st.unreferenced_bytes));
    cli::write_stdout(text);
  }
  if (st.missing_objects)
    tool.warning(fmt::format("{} referred to but missing", cli::count_noun(st.missing_objects, "object", "objects")));
  if (st.bad_objects)
    tool.warning(fmt::format("{} with a damaged header: run store verify",
                             cli::count_noun(st.bad_objects, "object", "objects")));
  if (tool.options().json)
    cli::write_json({{"store", c.dir},
                     {"files", rows},
                     {"logical_bytes", st.logical_bytes},
                     {"stored_bytes", st.stored_bytes()},
                     {"object_bytes", st.object_bytes},
                     {"manifest_bytes", st.manifest_bytes},
                     {"ratio", cli::ratio_json(st.logical_bytes, st.stored_bytes())},
                     {"objects", st.objects},
                     {"unreferenced_objects", st.unreferenced_objects},
                     {"unreferenced_bytes", st.unreferenced_bytes},
                     {"missing_objects", st.missing_objects},
                     {"bad_objects", st.bad_objects}},
                    *tool.options().json);
  return cli::kExitOk;
}

int run_rm(cli::Tool& tool, const StoreCommand& c) {
  store::Store store = store::Store::open(c.dir, false);
  for (const std::string& name : c.names) {
    store.remove(name);
    tool.summary(fmt::format("removed {} (its objects go at the next gc)", name));
  }
  if (tool.options().json) cli::write_json({{"store", c.dir}, {"removed", c.names}}, *tool.options().json);
  return cli::kExitOk;
}

int run_gc(cli::Tool& tool, const StoreCommand& c) {
  store::Store store = store::Store::open(c.dir, false);
  store::StoreGcReport r = store.gc();
  tool.summary(fmt::format("removed {}, {} freed; removed {}",
                           cli::count_noun(r.objects_removed, "unreferenced object", "unreferenced objects"),
                           cli::format_bytes(r.bytes_freed),
                           cli::count_noun(r.temp_removed, "leftover temporary file", "leftover temporary files")));
  if (tool.options().json)
    cli::write_json({{"store", c.dir},
                     {"objects_removed", r.objects_removed},
                     {"bytes_freed", r.bytes_freed},
                     {"temp_removed", r.temp_removed}},
                    *tool.options().json);
  return cli::kExitOk;
}

int run_verify(cli::Tool& tool, const StoreCommand& c) {
  store::Store store = store::Store::open(c.dir, false);
  store::StoreVerifyReport r = store.verify(c.repair, tool.options().threads);
  for (const std::string& p : r.problems) tool.warning(p);
  for (const std::string& p : r.removed) tool.summary("removed " + p);
  if (c.repair)
    for (const std::string& name : r.unrestorable) tool.summary(name + ": cannot be restored until it is added again");
  if (tool.options().json)
    cli::write_json({{"store", c.dir},
                     {"ok", r.ok()},
                     {"objects_checked", r.objects_checked},
                     {"manifests_checked", r.manifests_checked},
                     {"problems", r.problems},
                     {"removed", r.removed},
                     {"unrestorable", r.unrestorable}},
                    *tool.options().json);
  std::string checked = fmt::format("{} and {}", cli::count_noun(r.objects_checked, "object", "objects"),
                                    cli::count_noun(r.manifests_checked, "manifest", "manifests"));
  if (r.ok()) {
    tool.summary(checked + " verified");
    return cli::kExitOk;
  }
  throw invalid_input(fmt::format("{} in {}{}", cli::count_noun(r.problems.size(), "problem", "problems"), checked,
                                  c.repair ? fmt::format(", {} removed", r.removed.size()) : ""),
                      c.dir);
}

}  // namespace

StoreCommand* add_store_command(cli::Tool& tool) {
  static StoreCommand c;
  c.store = tool.add_subcommand("store", "Deduplicating store of many models: add, get, ls, rm, gc, stats, verify");
  c.store->require_subcommand(1);

  c.add = add_store_subcommand(tool, c, "add", "Add files to the store (tensors stored once, fine-tunes as BitX deltas)");
  c.add->add_option("files", c.inputs, "Files to add ('-': stdin, with --name); safetensors are split into tensors")
      ->type_name("FILE...")
      ->required();
  c.add->add_option("--name", c.name, "Name in the store (default: the file name; one FILE only)")->type_name("NAME");
  c.add->add_option("--base", c.base, "Make BitX deltas against this stored file (default: the most similar)")
      ->type_name("NAME");
  c.add->add_flag("--no-delta", c.no_delta, "Never store tensors as BitX deltas");
  c.add->add_flag("--replace", c.replace, "Replace a different file already stored under the same name");

  c.get = add_store_subcommand(tool, c, "get", "Restore a stored file byte for byte (SHA-256 checked)");
  c.get->add_option("name", c.name, "Name in the store")->type_name("NAME")->required();
  tool.add_output(*c.get, c.output);

  c.ls = add_store_subcommand(tool, c, "ls", "List the stored files with their logical and stored sizes");
  c.rm = add_store_subcommand(tool, c, "rm", "Remove files from the store (gc frees their objects)");
  c.rm->add_option("names", c.names, "Names in the store")->type_name("NAME...")->required();
  c.gc = add_store_subcommand(tool, c, "gc", "Remove objects no stored file refers to, and leftovers of killed adds");
  c.stats = add_store_subcommand(tool, c, "stats", "Logical vs stored bytes per file and for the store");
  c.verify = add_store_subcommand(tool, c, "verify", "Decode every object and check it and every manifest (exit 3 when bad)");
  c.verify->add_flag("--repair", c.repair, "Remove corrupt objects and misplaced entries so that add stores them again");
  return &c;
}

bool store_parsed(const StoreCommand* cmd) { return cmd != nullptr && cmd->store->parsed(); }

int run_store(cli::Tool& tool, StoreCommand* cmd) {
  const StoreCommand& c = *cmd;
  if (c.add->parsed()) return run_add(tool, c);
  if (c.get->parsed()) return run_get(tool, c);
  if (c.ls->parsed()) return run_ls(tool, c);
  if (c.rm->parsed()) return run_rm(tool, c);
  if (c.gc->parsed()) return run_gc(tool, c);
  if (c.verify->parsed()) return run_verify(tool, c);
  return run_stats(tool, c);
}

}  // namespace tk::tcompress
