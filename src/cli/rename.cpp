#include "cli/rename.h"

#include "tk/core/error.h"
#include "tk/io/glob.h"

namespace tk::cli {

namespace {

// Stars in a TO template (backslash escapes the next character).
size_t template_star_count(std::string_view to) {
  size_t n = 0;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == '\\') ++i;
    else if (to[i] == '*') ++n;
  }
  return n;
}

std::string substitute(std::string_view to, const std::vector<std::string>& captures) {
  std::string out;
  size_t star = 0;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == '\\' && i + 1 < to.size()) out += to[++i];
    else if (to[i] == '*') out += captures.at(star++);
    else out += to[i];
  }
  return out;
}

}  // namespace

RenameRule rename_rule_parse(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos)
    throw usage_error("invalid --rename '" + std::string(text) + "' (expected FROM=TO)");
  RenameRule rule{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  if (rule.from.empty() || rule.to.empty())
    throw usage_error("invalid --rename '" + std::string(text) + "' (FROM and TO must not be empty)");
  if (template_star_count(rule.to) > io::glob_star_count(rule.from))
    throw usage_error("invalid --rename '" + std::string(text) + "' (TO has more '*' than FROM)");
  return rule;
}

Renamer Renamer::parse(const std::vector<std::string>& texts) {
  std::vector<RenameRule> rules;
  for (const auto& t : texts) rules.push_back(rename_rule_parse(t));
  return Renamer(std::move(rules));
}

std::string Renamer::apply(std::string_view name) const {
  for (const auto& rule : rules_) {
    auto captures = io::glob_capture(rule.from, name);
    if (!captures) continue;
    std::string renamed = substitute(rule.to, *captures);
    if (renamed.empty())
      throw usage_error("--rename '" + rule.from + "=" + rule.to + "' gives an empty name", "tensor '" + std::string(name) + "'");
    return renamed;
  }
  return std::string(name);
}

}  // namespace tk::cli
