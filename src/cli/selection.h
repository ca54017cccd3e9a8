// Tensor selection by -t/--tensors and --exclude globs (tk/io/glob.h): a tensor is
// selected when it matches any -t pattern (or no -t was given) and no --exclude pattern.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tk::cli {

class TensorSelection {
 public:
  TensorSelection() = default;
  TensorSelection(std::vector<std::string> include, std::vector<std::string> exclude);

  // Decide for one tensor name, remembering which -t patterns matched something.
  bool selects(std::string_view name);

  // Throw kUsage ("no tensor matches -t 'PATTERN'") for the first -t pattern that has
  // matched no name passed to selects(): a typo should not silently select nothing.
  void check_all_patterns_used() const;

 private:
  std::vector<std::string> include_, exclude_;
  std::vector<bool> used_;
};

}  // namespace tk::cli
