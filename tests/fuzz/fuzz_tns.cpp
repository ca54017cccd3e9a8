// libFuzzer target for the FROSTT .tns reader (lib/tk/io/tns.cpp). Each input is a
// whole file (text, or gzip, inflated in memory) read from memory. A file that is
// accepted must describe a consistent sparse tensor (every index inside the shape,
// every value finite), and reading it again with that shape declared must give the
// same tensor.
#include <cmath>
#include <cstdint>

#include "fuzz_util.h"
#include "tk/io/tns.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tk::fuzz::check;
  tk::io::SparseTensor t;
  try {
    t = tk::io::read_tns(*tk::fuzz::memory_stream({data, size}, "fuzz.tns"));
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
    return 0;
  }
  const auto order = static_cast<size_t>(t.order());
  check(t.indices.size() == t.values.size() * order);
  for (size_t i = 0; i < t.indices.size(); ++i) check(t.indices[i] >= 0 && t.indices[i] < t.shape[i % order]);
  for (double v : t.values) check(std::isfinite(v));

  tk::io::TnsReadOptions declared;
  declared.shape = t.shape;
  tk::io::SparseTensor again = tk::io::read_tns(*tk::fuzz::memory_stream({data, size}, "fuzz.tns"), declared);
  check(again.shape == t.shape && again.indices == t.indices && again.values.size() == t.values.size());
  for (size_t i = 0; i < t.values.size(); ++i) check(again.values[i] == t.values[i]);
  return 0;
}
