#include "cli/selection.h"

#include "tk/core/error.h"
#include "tk/io/glob.h"

namespace tk::cli {

TensorSelection::TensorSelection(std::vector<std::string> include, std::vector<std::string> exclude)
    : include_(std::move(include)), exclude_(std::move(exclude)), used_(include_.size(), false) {}

bool TensorSelection::selects(std::string_view name) {
  bool included = include_.empty();
  for (size_t i = 0; i < include_.size(); ++i) {
    if (io::glob_match(include_[i], name)) {
      used_[i] = true;
      included = true;
    }
  }
  if (!included) return false;
  for (const auto& pattern : exclude_)
    if (io::glob_match(pattern, name)) return false;
  return true;
}

void TensorSelection::check_all_patterns_used() const {
  for (size_t i = 0; i < include_.size(); ++i)
    if (!used_[i]) throw usage_error("no tensor matches -t '" + include_[i] + "'");
}

}  // namespace tk::cli
