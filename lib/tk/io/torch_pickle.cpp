#include "tk/io/torch_pickle.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>

#include "tk/core/error.h"
#include "tk/io/torch_pickle_object.h"

namespace tk::io {

namespace {

using namespace pickle;

constexpr size_t kMaxRank = 64;
// A memo index this far past the dense ones goes to the hash table.
constexpr uint64_t kMemoGap = 1024;

// The dtype of a legacy typed storage class (torch.FloatStorage, ...).
std::optional<DType> storage_dtype(std::string_view name) {
  static const std::map<std::string_view, DType> kTypes = {
      {"FloatStorage", DType::kF32},   {"DoubleStorage", DType::kF64},      {"HalfStorage", DType::kF16},
      {"BFloat16Storage", DType::kBF16}, {"LongStorage", DType::kI64},      {"IntStorage", DType::kI32},
      {"ShortStorage", DType::kI16},   {"CharStorage", DType::kI8},         {"ByteStorage", DType::kU8},
      {"BoolStorage", DType::kBool},   {"ComplexFloatStorage", DType::kC64}};
  auto it = kTypes.find(name);
  return it == kTypes.end() ? std::nullopt : std::optional<DType>(it->second);
}

// torch.<dtype> globals: the dtype, or nullopt for one tensorkit lacks; false when the
// name is not a torch dtype at all.
bool torch_dtype(std::string_view name, std::optional<DType>* out) {
  static const std::map<std::string_view, std::optional<DType>> kTypes = {
      {"float32", DType::kF32},           {"float", DType::kF32},           {"float64", DType::kF64},
      {"double", DType::kF64},            {"float16", DType::kF16},         {"half", DType::kF16},
      {"bfloat16", DType::kBF16},         {"int64", DType::kI64},           {"long", DType::kI64},
      {"int32", DType::kI32},             {"int", DType::kI32},             {"int16", DType::kI16},
      {"short", DType::kI16},             {"int8", DType::kI8},             {"uint8", DType::kU8},
      {"uint16", DType::kU16},            {"uint32", DType::kU32},          {"uint64", DType::kU64},
      {"bool", DType::kBool},             {"complex64", DType::kC64},       {"cfloat", DType::kC64},
      {"float8_e4m3fn", DType::kF8E4M3},  {"float8_e5m2", DType::kF8E5M2},  {"float8_e8m0fnu", DType::kF8E8M0},
      {"float8_e4m3fnuz", DType::kF8E4M3FNUZ}, {"float8_e5m2fnuz", DType::kF8E5M2FNUZ},
      {"complex128", std::nullopt},       {"cdouble", std::nullopt},        {"complex32", std::nullopt},
      {"qint8", std::nullopt},            {"quint8", std::nullopt},         {"qint32", std::nullopt},
      {"quint4x2", std::nullopt},         {"float4_e2m1fn_x2", std::nullopt}};
  auto it = kTypes.find(name);
  if (it == kTypes.end()) return false;
  *out = it->second;
  return true;
}

class Unpickler {
 public:
  Unpickler(std::span<const uint8_t> data, std::string where, MemoryBudget& budget)
      : data_(data), where_(std::move(where)), budget_(budget) {
    none_.kind = Kind::kNone;
    true_.kind = false_.kind = Kind::kBool;
    empty_tuple_.kind = Kind::kTuple;
    true_.i = 1;
  }

  Object* run();
  // References from containers to their items, for bounding a walk over shared objects.
  uint64_t edges() const { return edges_; }

 private:
  Object* make(Kind kind) {
    budget_.charge(sizeof(Object) + sizeof(void*));
    arena_.emplace_back();
    arena_.back().kind = kind;
    return &arena_.back();
  }
  TensorPart& part(Object* o) {
    budget_.charge(sizeof(TensorPart));
    o->t = std::make_unique<TensorPart>();
    return *o->t;
  }
  std::string_view own(std::string s) {
    budget_.charge(s.size() + kNodeBytes);
    owned_.push_back(std::move(s));
    return owned_.back();
  }
  // Room for `n` more items in a container (whose capacity may be twice its size).
  void charge_items(uint64_t n) {
    budget_.charge(n * 2 * sizeof(Object*));
    edges_ += n;
  }
  Error bad(const std::string& what) const {
    return invalid_input("malformed pickle: " + what + " (byte " + std::to_string(op_at_) + ")", where_);
  }
  Error refuse(std::string_view global) const {
    return invalid_input("refusing to unpickle '" + std::string(global) +
                             "': only tensors, dicts, lists, tuples, numbers and strings are read (the weights-only "
                             "subset; nothing in the file is executed)",
                         where_);
  }
  const uint8_t* take(size_t n) {
    if (data_.size() - pos_ < n) throw bad("ends inside an opcode");
    const uint8_t* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint64_t le(size_t n) {
    const uint8_t* p = take(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
    return v;
  }
  std::string_view text(uint64_t n) {
    if (n > data_.size() - pos_) throw bad("a string runs past the end");
    const uint8_t* p = take(static_cast<size_t>(n));
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(n)};
  }
  std::string_view line() {
    const uint8_t* start = data_.data() + pos_;
    const void* nl = std::memchr(start, '\n', data_.size() - pos_);
    if (!nl) throw bad("a line runs past the end");
    size_t n = static_cast<size_t>(static_cast<const uint8_t*>(nl) - start);
    pos_ += n + 1;
    return {reinterpret_cast<const char*>(start), n};
  }
  Object* pop() {
    if (stack_.size() <= floor()) throw bad("pops an empty stack");
    Object* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Object* top() {
    if (stack_.size() <= floor()) throw bad("uses an empty stack");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void mark() {
    marks_.push_back(stack_.size());
    if (marks_.size() > marks_peak_) {
      budget_.charge(sizeof(size_t));
      marks_peak_ = marks_.size();
    }
  }
  // The objects above the last mark, which is removed.
  std::vector<Object*> pop_mark() {
    if (marks_.empty()) throw bad("no mark to pop to");
    std::vector<Object*> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push(Object* v) {
    stack_.push_back(v);
    if (stack_.size() > stack_peak_) {
      budget_.charge(2 * sizeof(Object*));
      stack_peak_ = stack_.size();
    }
  }
  Object* integer(int64_t v) {
    Object* o = make(Kind::kInt);
    o->i = v;
    return o;
  }
  Object* tuple(std::vector<Object*> items) {
    Object* o = make(Kind::kTuple);
    charge_items(items.size());
    o->items = std::move(items);
    return o;
  }
  // Memo entries refer to the object: a later get shares it. Indices are dense in the
  // pickles Python writes (0, 1, 2, ...), held in a vector; others in a hash table.
  void put(uint64_t index) {
    Object* v = top();
    if (index < memo_dense_.size() + kMemoGap && (index < memo_dense_.size() || !memo_.count(index))) {
      if (index >= memo_dense_.size()) {
        budget_.charge(2 * sizeof(Object*) * (index + 1 - memo_dense_.size()));
        memo_dense_.resize(index + 1, nullptr);
      }
      memo_count_ += memo_dense_[index] == nullptr;
      memo_dense_[index] = v;
      return;
    }
    auto [it, fresh] = memo_.try_emplace(index, v);
    if (fresh) {
      budget_.charge(kNodeBytes);
      ++memo_count_;
    } else {
      it->second = v;
    }
  }
  Object* get(uint64_t index) {
    if (index < memo_dense_.size() && memo_dense_[index]) return memo_dense_[index];
    auto it = memo_.find(index);
    if (it == memo_.end()) throw bad("memo entry " + std::to_string(index) + " was never stored");
    return it->second;
  }
  Object* global(std::string_view module, std::string_view name);
  Object* reduce(Object* callable, Object* args);
  Object* rebuild_tensor(const std::vector<Object*>& a, bool v3);
  Object* persistent(Object* pid);
  void set_items(Object* dict, const std::vector<Object*>& kv);
  void append(Object* list, const std::vector<Object*>& items);
  void push_text(uint8_t op);

  std::span<const uint8_t> data_;
  std::string where_;
  MemoryBudget& budget_;
  size_t pos_ = 0, op_at_ = 0;
  std::deque<Object> arena_;
  Object none_, true_, false_, empty_tuple_;  // shared, as in Python
  Object* small_ints_[256] = {};
  std::deque<std::string> owned_;
  std::vector<Object*> stack_;
  std::vector<size_t> marks_;
  size_t stack_peak_ = 0, marks_peak_ = 0;
  uint64_t edges_ = 0;
  std::vector<Object*> memo_dense_;
  std::unordered_map<uint64_t, Object*> memo_;
  uint64_t memo_count_ = 0;  // entries in both
  std::unordered_map<std::string_view, Object*> storages_;  // by key: one object per storage
};

Object* Unpickler::global(std::string_view module, std::string_view name) {
  std::string full = std::string(module) + "." + std::string(name);
  if (full == "collections.OrderedDict" || full == "torch._utils._rebuild_tensor_v2" ||
      full == "torch._utils._rebuild_tensor_v3" || full == "torch._utils._rebuild_parameter" ||
      full == "torch._utils._rebuild_parameter_with_state" || full == "torch.Size" || full == "torch.device" ||
      full == "torch.storage.UntypedStorage") {
    Object* g = make(Kind::kGlobal);
    g->untyped_storage = full == "torch.storage.UntypedStorage";
    g->s = own(std::move(full));
    return g;
  }
  if (module == "torch") {
    std::optional<DType> dtype = storage_dtype(name);
    // A storage of a dtype tensorkit lacks has none.
    if (dtype || (name.size() > 7 && name.ends_with("Storage")) || torch_dtype(name, &dtype)) {
      Object* g = make(Kind::kGlobal);
      g->dtype = dtype;
      g->s = own(std::move(full));
      return g;
    }
  }
  throw refuse(full);
}

Object* Unpickler::persistent(Object* pid) {
  // ('storage', storage type, key, location, size)
  if (pid->kind != Kind::kTuple || pid->items.size() != 5 || pid->items[0]->kind != Kind::kStr ||
      pid->items[0]->s != "storage")
    throw bad("a persistent id that is not a storage");
  Object* type = pid->items[1];
  Object* key = pid->items[2];
  Object* size = pid->items[4];
  if (type->kind != Kind::kGlobal || key->kind != Kind::kStr || size->kind != Kind::kInt || size->i < 0)
    throw bad("a storage id with the wrong types");
  uint64_t elem = 1;
  if (!type->untyped_storage) {
    if (!type->dtype || !type->s.ends_with("Storage")) {
      Object* s = make(Kind::kStorage);
      TensorPart& p = part(s);
      p.key = key->s;
      p.unsupported = own(std::string(type->s) + " has no tensorkit dtype");
      return s;
    }
    elem = static_cast<uint64_t>(dtype_bits(*type->dtype) / 8);
  }
  const uint64_t count = static_cast<uint64_t>(size->i);
  if (count > std::numeric_limits<uint64_t>::max() / elem) throw bad("a storage size that overflows");
  auto [it, fresh] = storages_.try_emplace(key->s, nullptr);
  if (!fresh) {
    if (it->second->t->storage_bytes != count * elem)
      throw bad("storage '" + std::string(key->s) + "' with two sizes");
    return it->second;
  }
  budget_.charge(kNodeBytes);
  Object* s = make(Kind::kStorage);
  TensorPart& p = part(s);
  p.key = key->s;
  p.storage_bytes = count * elem;
  s->dtype = type->dtype;
  it->second = s;
  return s;
}

// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]);
// _v3 adds the dtype after the hooks, for untyped storages.
Object* Unpickler::rebuild_tensor(const std::vector<Object*>& a, bool v3) {
  if (a.size() < (v3 ? 7u : 6u) || a.size() > (v3 ? 8u : 7u)) throw bad("a tensor rebuilt with the wrong arguments");
  Object* storage = a[0];
  if (storage->kind != Kind::kStorage || a[1]->kind != Kind::kInt || a[2]->kind != Kind::kTuple ||
      a[3]->kind != Kind::kTuple || a[1]->i < 0)
    throw bad("a tensor rebuilt from the wrong types");
  Object* t = make(Kind::kTensor);
  TensorPart& p = part(t);
  p.storage = storage;
  p.unsupported = storage->t->unsupported;
  t->dtype = storage->dtype;
  if (v3) {
    if (a[6]->kind != Kind::kGlobal) throw bad("a tensor rebuilt with a dtype that is not one");
    t->dtype = a[6]->dtype;
    if (!t->dtype) p.unsupported = own(std::string(a[6]->s) + " has no tensorkit dtype");
  }
  if (!t->dtype && p.unsupported.empty()) throw bad("a tensor without a dtype");
  if (a[2]->items.size() != a[3]->items.size() || a[2]->items.size() > kMaxRank)
    throw bad("a tensor whose size and stride differ in rank");
  p.offset = static_cast<uint64_t>(a[1]->i);
  budget_.charge(a[2]->items.size() * 2 * sizeof(int64_t));
  for (size_t k = 0; k < a[2]->items.size(); ++k) {
    Object* n = a[2]->items[k];
    Object* s = a[3]->items[k];
    if (n->kind != Kind::kInt || s->kind != Kind::kInt || n->i < 0 || s->i < 0)
      throw bad("a tensor with a negative or non-integer size or stride");
    p.shape.push_back(n->i);
    p.stride.push_back(s->i);
  }
  return t;
}

Object* Unpickler::reduce(Object* callable, Object* args) {
  if (callable->kind != Kind::kGlobal) throw bad(std::string("calls ") + kind_name(callable->kind));
  if (args->kind != Kind::kTuple) throw bad("call arguments that are not a tuple");
  const std::string_view f = callable->s;
  const auto& a = args->items;
  if (f == "collections.OrderedDict") {
    if (!a.empty()) throw bad("an OrderedDict built from arguments");
    return make(Kind::kDict);
  }
  if (f == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a, false);
  if (f == "torch._utils._rebuild_tensor_v3") return rebuild_tensor(a, true);
  if (f == "torch._utils._rebuild_parameter" || f == "torch._utils._rebuild_parameter_with_state") {
    if (a.empty() || a[0]->kind != Kind::kTensor) throw bad("a parameter rebuilt from something other than a tensor");
    return a[0];
  }
  if (f == "torch.Size") {
    if (a.size() != 1 || a[0]->kind != Kind::kTuple) throw bad("a torch.Size built from the wrong arguments");
    return a[0];
  }
  if (f == "torch.device") {
    std::string s;
    for (Object* x : a) {
      if (x->kind == Kind::kStr) s.append(x->s.substr(0, 64));
      if (x->kind == Kind::kInt) s.append(1, ':').append(std::to_string(x->i));
    }
    Object* d = make(Kind::kStr);
    d->s = own(std::move(s));
    return d;
  }
  // A storage type or a dtype is not callable in a weights-only file.
  throw refuse(f);
}

void Unpickler::set_items(Object* dict, const std::vector<Object*>& kv) {
  if (dict->kind != Kind::kDict) throw bad(std::string("sets items of ") + kind_name(dict->kind));
  if (kv.size() % 2 != 0) throw bad("an odd number of dict items");
  charge_items(kv.size());
  dict->items.insert(dict->items.end(), kv.begin(), kv.end());
}

void Unpickler::append(Object* list, const std::vector<Object*>& items) {
  if (list->kind != Kind::kList) throw bad(std::string("appends to ") + kind_name(list->kind));
  charge_items(items.size());
  list->items.insert(list->items.end(), items.begin(), items.end());
}

// The string and bytes opcodes: the object is a view of the pickle.
void Unpickler::push_text(uint8_t op) {
  const bool str = op == 'X' || op == 0x8c || op == 0x8d || op == 'T' || op == 'U';
  const size_t width = op == 0x8c || op == 'U' || op == 'C' ? 1 : op == 0x8d || op == 0x8e ? 8 : 4;
  Object* s = make(str ? Kind::kStr : Kind::kBytes);
  s->s = text(le(width));
  push(s);
}

Object* Unpickler::run() {
  while (true) {
    op_at_ = pos_;
    const uint8_t op = *take(1);
    switch (op) {
      case 0x80: {  // PROTO
        if (le(1) > 5) throw bad("unknown pickle protocol");
        break;
      }
      case 0x95: le(8); break;  // FRAME: a hint only
      case '.': {               // STOP
        if (!marks_.empty() || stack_.size() != 1) throw bad("stops with a stack that is not one object");
        return stack_.back();
      }
      case '(': mark(); break;
      case '}': push(make(Kind::kDict)); break;
      case ']': push(make(Kind::kList)); break;
      case ')': push(&empty_tuple_); break;
      case 't': push(tuple(pop_mark())); break;
      case 0x85: push(tuple({pop()})); break;
      case 0x86: {
        Object* b = pop();
        Object* a = pop();
        push(tuple({a, b}));
        break;
      }
      case 0x87: {
        Object* c = pop();
        Object* b = pop();
        Object* a = pop();
        push(tuple({a, b, c}));
        break;
      }
      case 'l': {
        Object* l = make(Kind::kList);
        append(l, pop_mark());
        push(l);
        break;
      }
      case 'd': {
        Object* d = make(Kind::kDict);
        set_items(d, pop_mark());
        push(d);
        break;
      }
      case 'q': put(le(1)); break;
      case 'r': put(le(4)); break;
      case 0x94: put(memo_count_); break;  // MEMOIZE
      case 'h': push(get(le(1))); break;
      case 'j': push(get(le(4))); break;
      case 'p':
      case 'g': {
        const std::string_view digits = line();
        if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
          throw bad("a memo index that is not a number");
        const uint64_t index = std::stoull(std::string(digits));
        if (op == 'p') put(index);
        else push(get(index));
        break;
      }
      case 'c': {  // GLOBAL
        const std::string_view module = line();
        const std::string_view name = line();
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Object* name = pop();
        Object* module = pop();
        if (name->kind != Kind::kStr || module->kind != Kind::kStr) throw bad("a global named by non-strings");
        push(global(module->s, name->s));
        break;
      }
      case 'R': {
        Object* args = pop();
        Object* callable = pop();
        push(reduce(callable, args));
        break;
      }
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args)
        pop();
        Object* cls = pop();
        throw refuse(cls->kind == Kind::kGlobal ? cls->s : std::string_view("an object"));
      }
      case 'b': {  // BUILD: the state of an OrderedDict (a state_dict's _metadata) is dropped
        pop();
        Object* target = top();
        if (target->kind != Kind::kDict) throw bad(std::string("sets the state of ") + kind_name(target->kind));
        break;
      }
      case 'Q': push(persistent(pop())); break;
      case 'N': push(&none_); break;
      case 0x88: push(&true_); break;
      case 0x89: push(&false_); break;
      case 'J': push(integer(static_cast<int32_t>(le(4)))); break;
      case 'K': {  // small ints are shared, as in Python
        Object*& small = small_ints_[le(1)];
        if (!small) small = integer(data_[pos_ - 1]);
        push(small);
        break;
      }
      case 'M': push(integer(static_cast<int64_t>(le(2)))); break;
      case 0x8a:
      case 0x8b: {  // LONG1, LONG4: little-endian two's complement
        const uint64_t n = le(op == 0x8a ? 1 : 4);
        if (n > 8) throw bad("an integer wider than 64 bits");
        const uint8_t* p = take(static_cast<size_t>(n));
        uint64_t v = 0;
        for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
        if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);
        push(integer(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {
        const uint64_t bits = __builtin_bswap64(le(8));  // big-endian
        Object* f = make(Kind::kFloat);
        std::memcpy(&f->f, &bits, 8);
        push(f);
        break;
      }
      case 'X': case 0x8c: case 0x8d: case 'T': case 'U': case 'B': case 'C': case 0x8e:
        push_text(op);
        break;
      case 's': {
        Object* value = pop();
        Object* key = pop();
        set_items(top(), {key, value});
        break;
      }
      case 'u': {
        std::vector<Object*> kv = pop_mark();
        set_items(top(), kv);
        break;
      }
      case 'a': {
        Object* value = pop();
        append(top(), {value});
        break;
      }
      case 'e': {
        std::vector<Object*> items = pop_mark();
        append(top(), items);
        break;
      }
      case '0': pop(); break;
      case '1': pop_mark(); break;
      case '2': push(top()); break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        throw invalid_input(std::string("unsupported pickle opcode ") + hex + " at byte " + std::to_string(op_at_) +
                                " (only the weights-only subset of pickles is read)",
                            where_);
      }
    }
  }
}

}  // namespace

PickleContents torch_read_pickle(std::span<const uint8_t> bytes, const std::string& where, const std::string& stem) {
  MemoryBudget budget(bytes.size(), where);
  Unpickler unpickler(bytes, where, budget);
  Object* root = unpickler.run();
  PickleContents out;
  pickle::walk(root, stem, unpickler.edges(), where, budget, &out);
  return out;
}

}  // namespace tk::io
