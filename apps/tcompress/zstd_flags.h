// zstd's spellings on tcompress's command line: users of zstd type -19, -T4, --ultra.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tk::tcompress {

// The arguments (without argv[0]) with the zstd flags that mean the same thing here
// rewritten: -N -> --level N (1..22), --ultra dropped (levels 20..22 need no opt-in),
// -TN -> -j N (-T0: the default, all cores). zstd flags with no meaning here (--rm, --fast,
// --long, -D, --train, -b) throw kUsage naming what tcompress does instead; zstd's -t
// (test) is -t GLOB here, and throws when its argument is a .tkz file. A value of an
// option of `app` is never rewritten, nor anything after "--".
std::vector<std::string> translate_zstd_flags(const CLI::App& app, int argc, char** argv);

}  // namespace tk::tcompress
