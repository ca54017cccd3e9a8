// libFuzzer target for the .npy reader (lib/tk/io/npy.cpp, npy_header.cpp). Each input
// is a whole file read from memory; its tensor is read, and a file that is accepted
// must survive a write / read round trip unchanged (when NumPy has a type for its
// dtype). The input is also fed to the header parser as dict text. The reader itself
// must refuse a shape the data cannot hold before allocating for it.
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "tk/io/npy.h"
#include "tk/io/npy_header.h"

namespace {

using tk::fuzz::check;

std::unique_ptr<tk::io::TensorReader> open(std::span<const uint8_t> bytes) {
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  return tk::io::npy_open(tk::fuzz::memory_stream(bytes, "fuzz.npy"), "t", options);
}

void round_trip(const tk::io::TensorReader& reader, const tk::Tensor& t) {
  if (!tk::io::npy_descr(t.dtype())) return;
  std::vector<uint8_t> sink;
  auto writer = tk::io::npy_writer(tk::io::OutputStream::to_memory(&sink));
  writer->begin(reader.tensors(), reader.metadata());
  writer->write(0, t);
  writer->finish();
  auto again = open(sink);
  check(again->tensors().size() == 1);
  tk::Tensor u = again->read(0);
  check(u.dtype() == t.dtype() && u.shape() == t.shape() && u.nbytes() == t.nbytes());
  check(t.nbytes() == 0 || std::memcmp(u.data(), t.data(), t.nbytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto reader = open({data, size});
    check(reader->tensors().size() == 1);
    tk::Tensor t = reader->read(0);
    const tk::io::TensorInfo& info = reader->tensors()[0];
    check(t.dtype() == info.dtype && t.shape() == info.shape && t.nbytes() == info.nbytes);
    round_trip(*reader, t);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
  }
  for (bool utf8 : {false, true}) {
    try {
      tk::io::npy_parse_header({reinterpret_cast<const char*>(data), size}, utf8);
    } catch (const tk::Error& e) {
      tk::fuzz::expect_kind(e);
    }
  }
  return 0;
}
