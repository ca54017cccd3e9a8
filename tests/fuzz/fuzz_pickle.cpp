// libFuzzer target for the pickle machine of PyTorch checkpoints (lib/tk/io/
// torch_pickle.cpp) alone: each input is a data.pkl. It must be read as data or refused
// with kInvalidInput, within its memory budget (the sanitizers' RSS limit catches a
// budget that does not hold); what it lists must be consistent: views of storages with
// as many strides as dimensions, names that are unique.
#include <cstdint>
#include <set>

#include "fuzz_util.h"
#include "tk/io/torch_pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tk::io::PickleContents c = tk::io::torch_read_pickle({data, size}, "fuzz/data.pkl", "fuzz");
    std::set<std::string> names;
    for (const tk::io::PickledTensor& t : c.tensors) {
      tk::fuzz::check(t.shape.size() == t.stride.size());
      tk::fuzz::check(names.insert(t.name).second);
      for (size_t k = 0; k < t.shape.size(); ++k) tk::fuzz::check(t.shape[k] >= 0 && t.stride[k] >= 0);
    }
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
  }
  return 0;
}
