// Bytes from files (tensor names, metadata keys and values, paths) shown to a person:
// on a terminal, a name holding ESC, a newline or a NUL could redraw the screen, forge
// a line of output or cut a message short. Every human-readable output (error lines,
// warnings, summaries, text tables, metadata listings) passes what it shows through
// escape_text; JSON output carries the real characters, escaped as JSON requires.
#pragma once

#include <string>
#include <string_view>

namespace tk::cli {

// The display form of `bytes`: printable ASCII and well-formed UTF-8 as they are; a
// backslash as "\\"; newline, tab, carriage return and NUL as "\n", "\t", "\r", "\0";
// every other byte of a C0 control, DEL, a C1 control (U+0080..U+009F), a bidirectional
// override or isolate (U+202A..U+202E, U+2066..U+2069) or a malformed UTF-8 sequence
// (stray, overlong, surrogate, beyond U+10FFFF, truncated) as "\xHH". The escaping can
// be undone byte for byte, so two different names never look the same.
std::string escape_text(std::string_view bytes);

// `json` (text that nlohmann's dump wrote, so valid UTF-8) with the code points that
// escape_text would escape but JSON leaves raw (DEL, C1 controls, bidirectional
// controls) written as "\uXXXX", which keeps it valid JSON.
std::string escape_json_text(std::string_view json);

}  // namespace tk::cli
