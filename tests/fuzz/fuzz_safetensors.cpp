// libFuzzer target for the safetensors reader. Each input is a whole file: it is read
// through the sequential (stream) reader, every tensor is read, and a file that is
// accepted must survive a write / read round trip unchanged. The input is also fed to
// the header parser as header text. tk::Error is the expected way to fail; anything
// else (a crash, a sanitizer report, a broken round trip) is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/safetensors.h"

namespace {

using tk::io::TensorReader;

tk::Buffer copy_of(const uint8_t* data, size_t size) {
  tk::Buffer b = tk::Buffer::allocate(size);
  if (size) std::memcpy(b.mutable_data(), data, size);
  return b;
}

std::unique_ptr<TensorReader> open_memory(tk::Buffer bytes) {
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  return tk::io::safetensors_open(tk::io::InputStream::from_buffer(std::move(bytes), "fuzz.safetensors"), options);
}

void check(bool ok) {
  if (!ok) std::abort();
}

// Write what was read and read it back: the same tensors, metadata and bytes.
void round_trip(const TensorReader& reader, const std::vector<tk::Tensor>& tensors) {
  std::vector<uint8_t> sink;
  auto writer = tk::io::safetensors_writer(tk::io::OutputStream::to_memory(&sink));
  writer->begin(reader.tensors(), reader.metadata());
  for (size_t i = tensors.size(); i-- > 0;) writer->write(i, tensors[i]);  // reverse: exercise holding
  writer->finish();

  auto again = open_memory(copy_of(sink.data(), sink.size()));
  check(again->metadata() == reader.metadata());
  check(again->tensors().size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto j = reader.find(again->tensors()[i].name);
    check(j.has_value());
    tk::Tensor t = again->read(i);
    const tk::Tensor& want = tensors[*j];
    check(t.dtype() == want.dtype() && t.shape() == want.shape() && t.nbytes() == want.nbytes());
    check(t.nbytes() == 0 || std::memcmp(t.data(), want.data(), t.nbytes()) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto reader = open_memory(copy_of(data, size));
    std::vector<tk::Tensor> tensors;
    for (size_t i = 0; i < reader->tensors().size(); ++i) tensors.push_back(reader->read(i));
    round_trip(*reader, tensors);
  } catch (const tk::Error& e) {
    check(e.kind() == tk::ErrorKind::kInvalidInput);
  }
  try {
    tk::io::safetensors_parse_header({data, size});
  } catch (const tk::Error& e) {
    check(e.kind() == tk::ErrorKind::kInvalidInput);
  }
  return 0;
}
