// Provenance in output metadata, like samtools' @PG lines: every tool that writes a
// tensor file appends {"tool", "version", "args"} to the "provenance" array of the JSON
// object stored under the metadata key `tk`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/output.h"
#include "tk/io/tensor_file.h"
#include "tk/quant/layout.h"

namespace tk::cli {

// The library's key (quant/layout.h), for the tools.
inline constexpr const char* kTkMetadataKey = quant::kTkMetadataKey;

struct ProvenanceEntry {
  std::string tool;
  std::string version;
  std::vector<std::string> args;  // the command line after the program name
};

// The new `tk` value: `previous` (the input's `tk` value, if any) with `entry` appended
// to its "provenance" array and its other keys kept. A `previous` that is not a JSON
// object is kept as a string under "previous"; a "provenance" that is not an array
// becomes the first element of one. Returned as compact JSON.
std::string provenance_merge(const std::optional<std::string>& previous, const ProvenanceEntry& entry);

// Apply provenance_merge to metadata[kTkMetadataKey] in place.
void provenance_add(io::Metadata& metadata, const ProvenanceEntry& entry);

// The command line as provenance records it: an argument (or the VALUE of --opt=VALUE)
// that names an existing path, or a path whose directory exists, keeps only its last
// component, so that the same command gives the same bytes in any directory.
std::vector<std::string> provenance_args(const std::vector<std::string>& args);

// Apply --drop-metadata and --set-metadata (kUsage for a malformed KEY=VALUE, for the
// reserved key `tk`, or for a key both set and dropped).
void metadata_edit(io::Metadata& metadata, const OutputOptions& options);

// The metadata of a file a tool composes: metadata_edit, then `entry` appended unless
// --no-provenance, then "format": "pt" unless the key is present or was dropped
// (transformers refuses a safetensors file whose metadata lacks it).
void metadata_stamp(io::Metadata& metadata, const OutputOptions& options, const ProvenanceEntry& entry);

}  // namespace tk::cli
