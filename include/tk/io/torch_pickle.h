// The pickle of a torch.save archive (NAME/data.pkl) read as data: a small machine that
// knows only the weights-only subset (dicts and OrderedDicts, lists, tuples, numbers,
// strings, None, and the tensor rebuild functions over persistent storage ids); any
// other callable is refused with kInvalidInput naming it, and nothing is executed.
//
// Memory is bounded by the pickle's size: everything the machine builds (objects, memo
// entries, the stack, container items, the names of the tensors and of what is skipped)
// is counted against a budget of kPickleBytesPerByte per pickle byte plus
// kPickleBaseBytes; past it the pickle is refused as invalid input. The pickles
// torch.save writes take 16 to 26 bytes per byte (a state_dict, an optimizer's state).
// Memoised objects are shared by reference, never copied.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/shape.h"
#include "tk/io/tensor_file.h"

namespace tk::io {

inline constexpr uint64_t kPickleBytesPerByte = 64;
inline constexpr uint64_t kPickleBaseBytes = uint64_t{16} << 20;

// A tensor the pickle describes: a view (offset and strides in elements) into the
// storage `storage_key` of `storage_bytes` bytes.
struct PickledTensor {
  std::string name;  // its path through the containers, '.'-joined
  std::string storage_key;
  uint64_t storage_bytes = 0;
  DType dtype = DType::kF32;
  uint64_t offset = 0;
  Shape shape;
  std::vector<int64_t> stride;  // all >= 0
};

struct PickleContents {
  std::deque<PickledTensor> tensors;  // grown without copies  // in the order the containers list them
  std::vector<SkippedObject> skipped;  // one entry per subtree without tensors
};

// Interpret `pickle`; `where` names it in errors, `stem` names a tensor pickled on its
// own. Throws kInvalidInput for a malformed or hostile pickle (refused callables,
// containers nested deeper than 64 or holding themselves, two tensors of one name, the
// memory budget exceeded). A dict key given twice keeps its last value, as in Python.
PickleContents torch_read_pickle(std::span<const uint8_t> pickle, const std::string& where,
                                 const std::string& stem);

}  // namespace tk::io
