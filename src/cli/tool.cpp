#include "cli/tool.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <sstream>

#include "cli/display_text.h"
#include "cli/error_report.h"
#include "cli/report.h"
#include "cli/signals.h"
#include "cli/std_streams.h"
#include "cli/version.h"
#include "cli/wait_policy.h"
#include "tk/core/error.h"
#include "tk/core/mapped_files.h"

namespace tk::cli {

// Before any library's constructor, so that libgomp starts with it (cli/wait_policy.h).
// Here, in the object every tool links, so that the entry is not left out of the link.
[[gnu::used, gnu::section(".preinit_array")]] static void (*const wait_policy_entry)(int, char**, char**) =
    &set_passive_waiting;

namespace {

// One line on stderr: "TOOL: PREFIXTEXT", the text escaped (display_text.h) so that
// names from files cannot break the line or reach the terminal as controls.
void print_line(const std::string& tool, const char* prefix, std::string_view text) {
  std::string line = tool + ": " + prefix + escape_text(text) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

constexpr size_t kHelpWidth = 100;

// `text` with spaces turned into newlines so that no line is longer than `width` (a
// longer word stays whole on its own line).
std::string wrap_words(const std::string& text, size_t width) {
  std::string out;
  size_t line = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const size_t word = end - start;
    if (word > 0) {
      if (line > 0 && line + 1 + word > width) {
        out += '\n';
        line = 0;
      } else if (line > 0) {
        out += ' ';
        ++line;
      }
      out.append(text, start, word);
      line += word;
    }
    start = end + 1;
  }
  return out;
}

// `text` with `spaces` spaces after each newline.
std::string indent_lines(const std::string& text, size_t spaces) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out.append(spaces, ' ');
  }
  return out;
}

// CLI11's help with its artefacts removed: a flag's name without the default of its
// negation ("--progress,--no-progress{false}"), an option's type name without its
// validators' descriptions ("hevc|av1|h264:{hevc,av1,h264}", "N:NONNEGATIVE").
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    if (positional) return CLI::Formatter::make_option_name(opt, positional);
    std::string names;
    for (const std::string& n : opt->get_snames()) names += (names.empty() ? "-" : ",-") + n;
    for (const std::string& n : opt->get_lnames()) names += (names.empty() ? "--" : ",--") + n;
    return names;
  }
  // Descriptions wrapped to fit 100 columns: CLI11 indents what follows each newline.
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap_words(opt->get_description(), kHelpWidth - get_column_width());
  }
  std::string make_description(const CLI::App* app) const override {
    return wrap_words(CLI::Formatter::make_description(app), kHelpWidth);
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrap_words(sub->get_description(), kHelpWidth - get_column_width()), get_column_width());
    return out.str();
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
    if (opt->get_type_size() == 0) return {};
    // CLI11 appends validators as ":DESCRIPTION"; a ':' inside brackets is the name's own.
    std::string type = opt->get_type_name();
    int depth = 0;
    for (size_t i = 0; i < type.size(); ++i) {
      depth += type[i] == '[' ? 1 : type[i] == ']' ? -1 : 0;
      if (type[i] == ':' && depth == 0) {
        type.resize(i);
        break;
      }
    }
    std::string out = type.empty() ? std::string() : " " + type;
    if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (opt->get_required()) out += " REQUIRED";
    return out;
  }
};

}  // namespace

namespace {

// The end of every tool's --help: what its exit codes mean (README, "Common flags").
constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0  success\n"
    "  1  runtime failure (tinfo diff: the files differ; tbench compare: a regression)\n"
    "  2  usage error\n"
    "  3  invalid or corrupt input\n"
    "  4  I/O error (a failed write to stdout included)\n"
    "  5  resource unavailable (a codec, a device)\n";

}  // namespace

Tool::Tool(std::string name, std::string description) : name_(std::move(name)), app_(std::move(description), name_) {
  app_.set_version_flag("--version", [this] { return version_text(name_); }, "Print the version and features");
  app_.set_help_flag("-h,--help", "Print this help");
  app_.formatter(std::make_shared<HelpFormatter>());
  app_.footer(kExitCodesHelp);
  add_common_options(app_, options_);
}

void Tool::check_output(const std::string& output, const std::vector<std::string>& inputs) const {
  check_binary_output(output, stdout_is_terminal());
  check_output_not_directory(output);
  if (!inputs.empty()) check_output_not_input(inputs, output);
  check_new_output(output);
}

void Tool::set_examples(const std::vector<std::pair<std::string, std::string>>& examples) {
  size_t width = 0;
  bool fits = true;
  for (const auto& [command, _] : examples) width = std::max(width, command.size());
  for (const auto& [_, what] : examples) fits = fits && 2 + width + 2 + what.size() <= kHelpWidth;
  // Side by side when every row fits in 100 columns, else each description under its command.
  std::string text = "Examples:\n";
  for (const auto& [command, what] : examples) {
    if (fits) text += "  " + command + std::string(width - command.size() + 2, ' ') + what + "\n";
    else text += "  " + command + "\n      " + indent_lines(wrap_words(what, kHelpWidth - 6), 6) + "\n";
  }
  app_.footer(text + "\n" + kExitCodesHelp);
}

void Tool::set_gpu_work(const std::string& what) {
  gpu_work_ = what;
  const std::string text = device_help(what);
  app_.get_option("--device")->description(text);
  for (CLI::App* sub : app_.get_subcommands({})) {
    if (CLI::Option* o = sub->get_option_no_throw("--device")) o->description(text);
  }
}

CLI::App* Tool::add_subcommand(const std::string& name, const std::string& description) {
  CLI::App* sub = app_.add_subcommand(name, description);
  sub->set_help_flag("-h,--help", "Print this help");
  add_common_options(*sub, options_);
  return sub;
}

void Tool::add_output(CLI::App& app, std::string& output) {
  app.add_option("-o,--output", output, "Output file ('-': stdout, the default)")->type_name("OUT");
  add_force_flag(app, output_);
}

void Tool::add_metadata_options(CLI::App& app, bool provenance) {
  add_metadata_edit_options(app, output_);
  if (provenance) add_provenance_flag(app, output_);
}

int Tool::run(int argc, char** argv, const std::function<int()>& body) {
  install_signal_handlers();
  args_.assign(argv + (argc > 0 ? 1 : 0), argv + argc);
  int code = run_body(argc, argv, body);
  if (code == kExitBrokenPipe) return code;
  try {
    close_stdout();
  } catch (...) {
    return report(std::current_exception());
  }
  return code;
}

int Tool::run_body(int argc, char** argv, const std::function<int()>& body) {
  try {
    try {
      if (argument_filter_) {
        std::vector<std::string> args = argument_filter_(argc, argv);
        std::vector<char*> filtered{argc > 0 ? argv[0] : nullptr};
        for (std::string& a : args) filtered.push_back(a.data());
        app_.parse(static_cast<int>(filtered.size()), filtered.data());
      } else {
        app_.parse(argc, argv);
      }
    } catch (const CLI::CallForHelp&) {
      write_stdout(app_.help());
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      write_stdout(app_.help("", CLI::AppFormatMode::All));
      return kExitOk;
    } catch (const CLI::CallForVersion& e) {
      write_stdout(e.what());
      return kExitOk;
    } catch (const CLI::RequiredError&) {
      // CLI11 reports "A subcommand is required" for `tool foo`; name the word instead.
      const std::vector<std::string> extra = app_.remaining();
      if (app_.get_subcommands().empty() && !app_.get_subcommands({}).empty() && !extra.empty())
        throw usage_error("unknown subcommand '" + extra.front() + "'");
      throw;
    }
    apply_common_options(options_, stderr_is_terminal());
    if (gpu_work_.empty()) require_no_gpu(options_.device, name_);
    io::Metadata probe;
    metadata_edit(probe, output_);  // a bad --set-metadata fails before any work, not at the write
    const int code = body();
    if (code == kExitOk) check_mapped_files();
    return code;
  } catch (...) {
    return report(std::current_exception());
  }
}

int Tool::report(const std::exception_ptr& error) {
  std::string command = name_;
  for (const CLI::App* sub : app_.get_subcommands()) command += " " + sub->get_name();
  // Whatever failed after an input shrank under its mapping (a header read as zeros, a
  // write from the lost pages) failed because of that: name the input instead.
  std::exception_ptr cause = error;
  try {
    check_mapped_files(/*after_failure=*/true);
  } catch (...) {
    cause = std::current_exception();
  }
  ErrorReport r = error_report(cause, command, stdout_pipe_broken());
  if (!r.message.empty()) print_error(r.message);
  return r.exit_code;
}

void Tool::print_error(std::string_view text) const { print_line(name_, "error: ", text); }

ProvenanceEntry Tool::provenance() const { return {name_, tk_version(), args_}; }

void Tool::summary(std::string_view text) const {
  if (options_.quiet) return;
  print_line(name_, "", text);
}

void Tool::verbose(int level, std::string_view text) const {
  if (options_.verbose < level) return;
  print_line(name_, "", text);
}

void Tool::warning(std::string_view text) const { print_line(name_, "warning: ", text); }

}  // namespace tk::cli
