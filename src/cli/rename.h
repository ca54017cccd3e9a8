// --rename FROM=TO rules. FROM is a glob (tk/io/glob.h); each `*` in TO is replaced by
// what the `*` at the same position in FROM matched ("model.*=*" strips a prefix,
// "*.weight=*.w" changes a suffix). `\*` in TO is a literal star. A name is renamed by
// the first rule whose FROM matches it, and kept as it is when none does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tk::cli {

struct RenameRule {
  std::string from, to;
};

// Parse "FROM=TO" (split at the first '='). Throws kUsage when there is no '=', FROM or
// TO is empty, or TO has more `*` than FROM.
RenameRule rename_rule_parse(std::string_view text);

class Renamer {
 public:
  Renamer() = default;
  explicit Renamer(std::vector<RenameRule> rules) : rules_(std::move(rules)) {}
  // Parse each "FROM=TO" with rename_rule_parse.
  static Renamer parse(const std::vector<std::string>& texts);

  bool empty() const { return rules_.empty(); }
  // The new name of `name`. Throws kUsage when a rule would produce an empty name.
  std::string apply(std::string_view name) const;

 private:
  std::vector<RenameRule> rules_;
};

}  // namespace tk::cli
