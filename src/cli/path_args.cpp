#include "cli/path_args.h"

namespace tk::cli {

bool is_std_stream(const std::string& arg) { return arg == "-"; }

std::string input_display_name(const std::string& arg) { return is_std_stream(arg) ? "<stdin>" : arg; }
std::string output_display_name(const std::string& arg) { return is_std_stream(arg) ? "<stdout>" : arg; }

std::string file_path(const std::string& arg) { return is_std_stream(arg) ? std::string() : arg; }

std::unique_ptr<io::InputStream> open_input(const std::string& arg, const io::InputOptions& options) {
  if (is_std_stream(arg)) return io::InputStream::standard_input();
  return io::InputStream::open(arg, options);
}

std::unique_ptr<io::OutputStream> open_output(const std::string& arg, const io::OutputOptions& options) {
  if (is_std_stream(arg)) return io::OutputStream::standard_output(options);
  return io::OutputStream::open(arg, options);
}

std::unique_ptr<io::TensorReader> open_tensor_file(const std::string& arg, const io::ReadOptions& options) {
  if (is_std_stream(arg)) return io::open_reader(io::InputStream::standard_input(), options);
  return io::open_reader(arg, options);
}

std::unique_ptr<io::TensorWriter> open_writer(const std::string& arg, const io::WriteOptions& options) {
  if (is_std_stream(arg)) return io::open_writer(io::OutputStream::standard_output({options.durable}), options);
  return io::open_writer(arg, options);
}

}  // namespace tk::cli
