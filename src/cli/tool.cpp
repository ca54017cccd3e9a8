#include "cli/tool.h"

#include <cstdio>
#include <new>

#include "cli/report.h"
#include "cli/signals.h"
#include "cli/std_streams.h"
#include "cli/version.h"

namespace tk::cli {

namespace {

// CLI11 messages start with a capital ("The following argument ..."); ours do not.
std::string lower_first(std::string s) {
  if (s.size() >= 2 && s[0] >= 'A' && s[0] <= 'Z' && !(s[1] >= 'A' && s[1] <= 'Z')) s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

}  // namespace

Tool::Tool(std::string name, std::string description) : name_(std::move(name)), app_(std::move(description), name_) {
  app_.set_version_flag("--version", [this] { return version_text(name_); }, "Print the version and features");
  app_.set_help_flag("-h,--help", "Print this help");
  add_common_options(app_, options_);
}

CLI::App* Tool::add_subcommand(const std::string& name, const std::string& description) {
  CLI::App* sub = app_.add_subcommand(name, description);
  sub->set_help_flag("-h,--help", "Print this help");
  add_common_options(*sub, options_);
  return sub;
}

int Tool::run(int argc, char** argv, const std::function<int()>& body) {
  install_signal_handlers();
  args_.assign(argv + (argc > 0 ? 1 : 0), argv + argc);
  int code = run_body(argc, argv, body);
  if (code == kExitBrokenPipe) return code;
  try {
    close_stdout();
  } catch (const Error& e) {
    if (stdout_pipe_broken()) return kExitBrokenPipe;
    return report_error(e);
  }
  return code;
}

int Tool::run_body(int argc, char** argv, const std::function<int()>& body) {
  try {
    try {
      app_.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      write_stdout(app_.help());
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      write_stdout(app_.help("", CLI::AppFormatMode::All));
      return kExitOk;
    } catch (const CLI::CallForVersion& e) {
      write_stdout(e.what());
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      return report_parse_error(e);
    }
    apply_common_options(options_, stderr_is_terminal());
    return body();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kIo && stdout_pipe_broken()) return kExitBrokenPipe;
    return report_error(e);
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
    return kExitUnavailable;
  } catch (const std::exception& e) {
    print_error(std::string("internal error: ") + e.what());
    return kExitFailure;
  }
}

int Tool::report_parse_error(const CLI::ParseError& e) {
  std::string command = name_;
  for (const CLI::App* sub : app_.get_subcommands()) command += " " + sub->get_name();
  print_error(lower_first(e.what()) + " (see '" + command + " --help')");
  return kExitUsage;
}

int Tool::report_error(const Error& e) {
  std::string text = e.what();
  if (!e.where().empty()) text += " (" + e.where() + ")";
  print_error(text);
  return exit_code_for(e.kind());
}

void Tool::print_error(std::string_view text) const {
  std::fprintf(stderr, "%s: error: %.*s\n", name_.c_str(), static_cast<int>(text.size()), text.data());
}

ProvenanceEntry Tool::provenance() const { return {name_, tk_version(), args_}; }

void Tool::summary(std::string_view text) const {
  if (options_.quiet) return;
  std::fprintf(stderr, "%s: %.*s\n", name_.c_str(), static_cast<int>(text.size()), text.data());
}

void Tool::verbose(int level, std::string_view text) const {
  if (options_.verbose < level) return;
  std::fprintf(stderr, "%s: %.*s\n", name_.c_str(), static_cast<int>(text.size()), text.data());
}

void Tool::warning(std::string_view text) const {
  std::fprintf(stderr, "%s: warning: %.*s\n", name_.c_str(), static_cast<int>(text.size()), text.data());
}

}  // namespace tk::cli
