#include "zstd_flags.h"

#include <charconv>
#include <optional>

#include "tk/core/error.h"

namespace tk::tcompress {

namespace {

// The number after `prefix` in `arg` when the rest is all digits ("-19" -> 19).
std::optional<int> number_after(const std::string& arg, size_t prefix) {
  if (arg.size() <= prefix || arg.size() > prefix + 3) return std::nullopt;
  int n = 0;
  auto [end, ec] = std::from_chars(arg.data() + prefix, arg.data() + arg.size(), n);
  if (ec != std::errc() || end != arg.data() + arg.size()) return std::nullopt;
  return n;
}

// True when `arg` names an option of `app` (or of one of its subcommands) that takes a
// value, so that the next argument is that value ("--crf -1" is no level).
bool takes_value(const CLI::App& app, const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg.find('=') != std::string::npos) return false;
  const CLI::Option* opt = app.get_option_no_throw(arg);
  if (!opt) {
    for (const CLI::App* sub : app.get_subcommands({}))
      if ((opt = sub->get_option_no_throw(arg))) break;
  }
  return opt && opt->get_items_expected_min() > 0;
}

bool is_container_file(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".tkz") == 0;
}

}  // namespace

std::vector<std::string> translate_zstd_flags(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> out;
  bool literal = false;
  std::optional<size_t> level_at;  // where the rewritten --level is in `out`
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool value = i > 1 && takes_value(app, argv[i - 1]);
    if (literal || value || arg.size() < 2 || arg[0] != '-') {
      out.push_back(arg);
      continue;
    }
    if (arg == "--") {
      literal = true;
      out.push_back(arg);
    } else if (auto level = number_after(arg, 1); level && *level >= 1 && *level <= 22) {
      // As in zstd, the last level given wins.
      if (!level_at) {
        level_at = out.size();
        out.insert(out.end(), {"--level", ""});
      }
      out[*level_at + 1] = std::to_string(*level);
    } else if (arg == "--ultra") {
      // zstd's opt-in for levels 20..22, which --level takes as they are.
    } else if (auto threads = number_after(arg, 2); threads && arg.starts_with("-T")) {
      if (*threads > 0) out.insert(out.end(), {"-j", std::to_string(*threads)});
    } else if (arg == "--rm") {
      throw usage_error("tcompress never removes its input; delete it after the command succeeds", arg);
    } else if (arg == "--fast" || arg.starts_with("--fast=")) {
      throw usage_error("no negative levels here; --level 1 is the fastest", arg);
    } else if (arg == "--long" || arg.starts_with("--long=")) {
      throw usage_error("the coded streams are chunked (--chunk BYTES); there is no long-distance mode", arg);
    } else if ((arg == "-t" || arg == "--tensors") && i + 1 < argc && is_container_file(argv[i + 1])) {
      throw usage_error(std::string("-t selects tensors by name here; to test a container as zstd -t does, run "
                                    "'tcompress -d ") + argv[i + 1] + " -o /dev/null'",
                        arg + " " + argv[i + 1]);
    } else if (arg == "-D" || arg == "--train" || arg == "-b" || arg.starts_with("-b")) {
      if (arg == "-D" || arg == "--train")
        throw usage_error("no dictionaries here; 'tcompress store' deduplicates tensors across models", arg);
      if (arg == "-b" || number_after(arg, 2))
        throw usage_error("zstd's benchmark is 'tbench compress' here", arg);
      out.push_back(arg);
    } else {
      out.push_back(arg);
    }
  }
  return out;
}

}  // namespace tk::tcompress
