// libFuzzer target for .npz archives and the choice between .npz and a PyTorch
// checkpoint (lib/tk/io/npz.cpp, torch.cpp): each input is a zip opened from memory by
// the generic opener; every array of at most 16 MiB is read whole and piece by piece
// and checked against its listing. A file that opens as .npz and holds only arrays
// NumPy can type survives a write / read round trip unchanged.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "tk/io/npz.h"
#include "tk/io/tensor_file.h"

namespace {

void round_trip(tk::io::TensorReader& reader) {
  uint64_t total = 0;
  for (const tk::io::TensorInfo& info : reader.tensors()) total += info.nbytes;
  if (total > (uint64_t{16} << 20)) return;
  std::vector<uint8_t> sink;
  std::vector<tk::Tensor> tensors;
  try {
    auto writer = tk::io::npz_writer(tk::io::OutputStream::to_memory(&sink));
    writer->begin(reader.tensors(), {});
    for (size_t i = 0; i < reader.tensors().size(); ++i) {
      tensors.push_back(reader.read(i));
      writer->write(i, tensors.back());
    }
    writer->finish();
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, {tk::ErrorKind::kUsage, tk::ErrorKind::kInvalidInput});  // names or dtypes .npz refuses
    return;
  }
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  auto again = tk::io::open_reader(tk::fuzz::memory_stream(sink, "again.npz"), options);
  tk::fuzz::check(again->tensors().size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    tk::Tensor u = again->read(i);
    tk::fuzz::check(u.dtype() == tensors[i].dtype() && u.shape() == tensors[i].shape());
    tk::fuzz::check(u.nbytes() == 0 || std::memcmp(u.data(), tensors[i].data(), u.nbytes()) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto kinds = {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable};
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  try {
    auto reader = tk::io::open_reader(tk::fuzz::memory_stream({data, size}, "fuzz.npz"), options);
    tk::fuzz::read_every_tensor(*reader, kinds, true);
    if (reader->format() == tk::io::FileFormat::kNpz) round_trip(*reader);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, kinds);
  }
  return 0;
}
