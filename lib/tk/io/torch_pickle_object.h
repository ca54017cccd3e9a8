// The values the pickle machine of torch_pickle.cpp builds, and the budget that bounds
// them; shared with the walk that names the tensors among them (torch_pickle_walk.cpp).
// Internal to the io module.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/torch_pickle.h"

namespace tk::io::pickle {

// Containers nested deeper than this are refused (a state_dict is two or three deep).
constexpr int kMaxDepth = 64;
// What a hash-table node or a heap string costs beyond its bytes, roughly.
constexpr uint64_t kNodeBytes = 48;

// Counts the bytes a pickle makes the reader build; refuses the pickle past its limit.
class MemoryBudget {
 public:
  MemoryBudget(uint64_t pickle_bytes, std::string where)
      : left_(kPickleBaseBytes + std::min(pickle_bytes, std::numeric_limits<uint64_t>::max() / 64) *
                                     kPickleBytesPerByte),
        limit_(left_),
        pickle_bytes_(pickle_bytes),
        where_(std::move(where)) {}
  void charge(uint64_t bytes) {
    if (bytes > left_)
      throw invalid_input("malformed pickle: it builds more than " + std::to_string(limit_ >> 20) +
                              " MiB of objects from " + std::to_string(pickle_bytes_) + " bytes",
                          where_);
    left_ -= bytes;
  }
  void refund(uint64_t bytes) { left_ = std::min(limit_, left_ + bytes); }

 private:
  uint64_t left_, limit_, pickle_bytes_;
  std::string where_;
};

struct Object;

// The parts of a storage (kStorage) or a tensor (kTensor).
struct TensorPart {
  std::string_view key;  // kStorage: its entry under data/
  uint64_t storage_bytes = 0;
  const Object* storage = nullptr;  // kTensor
  std::string_view unsupported;     // why it cannot be read (a dtype tensorkit lacks)
  uint64_t offset = 0;              // in elements
  Shape shape;
  std::vector<int64_t> stride;
};

// A Python value as the unpickler builds it. Objects live in an arena and point at each
// other, so that cycles and deep nesting cost nothing to free; strings are views of the
// pickle or of strings the unpickler owns.
struct Object {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kBytes, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = Kind::kNone;
  bool untyped_storage = false;  // kGlobal torch.storage.UntypedStorage: sizes in bytes
  int8_t holds_tensor = -1;      // the walker's answer, once known
  bool on_path = false;          // the walker is inside it
  // kGlobal naming a storage type or a dtype, kStorage, kTensor: the dtype, when
  // tensorkit has it.
  std::optional<DType> dtype;
  union {
    int64_t i = 0;  // kBool, kInt
    double f;       // kFloat
  };
  std::string_view s;            // kStr, kBytes; kGlobal: "module.name"
  std::vector<Object*> items;    // kTuple, kList; kDict: key, value, key, value, ...
  std::unique_ptr<TensorPart> t;  // kStorage, kTensor
};

using Kind = Object::Kind;

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "a bool";
    case Kind::kInt: return "an int";
    case Kind::kFloat: return "a float";
    case Kind::kStr: return "a string";
    case Kind::kBytes: return "bytes";
    case Kind::kTuple: return "a tuple";
    case Kind::kList: return "a list";
    case Kind::kDict: return "a dict";
    case Kind::kGlobal: return "a class or function";
    case Kind::kStorage: return "a storage";
    case Kind::kTensor: return "a tensor";
  }
  return "an object";
}

// Collect the tensors under `root` (named `stem` when it is one) into `out`, and the
// subtrees without tensors into its skipped list; `edges` (container items in all)
// bounds the visits of shared containers.
void walk(Object* root, const std::string& stem, uint64_t edges, const std::string& where, MemoryBudget& budget,
          PickleContents* out);

}  // namespace tk::io::pickle
