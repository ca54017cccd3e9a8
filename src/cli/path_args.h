// Path arguments as a user writes them: "-" names standard input (for an input) or
// standard output (for -o). The library only knows file paths and the standard streams'
// own entry points; this is the one place that maps the one to the other.
#pragma once

#include <memory>
#include <string>

#include "tk/io/stream.h"
#include "tk/io/tensor_file.h"

namespace tk::cli {

// Whether `arg` names a standard stream ("-") rather than a file.
bool is_std_stream(const std::string& arg);

// `arg` as messages name it: "<stdin>" / "<stdout>" for "-", else the path itself.
std::string input_display_name(const std::string& arg);
std::string output_display_name(const std::string& arg);

// `arg` as a path for library look-ups in the file system (a directory, the config.json
// beside a model): empty for "-", which names no place.
std::string file_path(const std::string& arg);

// Open an input argument: standard input for "-", else the file (io::InputStream::open).
std::unique_ptr<io::InputStream> open_input(const std::string& arg, const io::InputOptions& options = {});
// Open an output argument: standard output for "-", else the file (io::OutputStream::open).
std::unique_ptr<io::OutputStream> open_output(const std::string& arg, const io::OutputOptions& options = {});

// io::open_reader for an input argument: standard input for "-", else the file (or a
// directory or shard index: a sharded model).
std::unique_ptr<io::TensorReader> open_tensor_file(const std::string& arg, const io::ReadOptions& options = {});

// io::open_writer for an output argument: onto standard output for "-" (in
// options.format, else safetensors), else the file, its format from its extension.
std::unique_ptr<io::TensorWriter> open_writer(const std::string& arg, const io::WriteOptions& options = {});

}  // namespace tk::cli
