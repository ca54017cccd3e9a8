#include "tk/io/torch.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "tk/core/error.h"
#include "tk/io/zip.h"

namespace tk::io {

namespace {

// Containers nested deeper than this are refused (a state_dict is two or three deep).
constexpr int kMaxDepth = 64;
constexpr size_t kMaxRank = 64;

// A Python value as the unpickler builds it. Objects live in an arena and point at each
// other, so that cycles and deep nesting cost nothing to free.
struct PyObject {
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kBytes, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = Kind::kNone;
  int64_t i = 0;  // kBool, kInt
  double f = 0;
  std::string s;  // kStr, kBytes; kGlobal: "module.name"
  std::vector<PyObject*> items;                         // kTuple, kList
  std::vector<std::pair<PyObject*, PyObject*>> pairs;   // kDict
  // kGlobal naming a storage type or a dtype: the dtype, when tensorkit has it.
  std::optional<DType> dtype;
  bool untyped_storage = false;  // torch.storage.UntypedStorage: sizes in bytes
  // kStorage: the entry key and size in bytes; kTensor: its storage and view.
  std::string key;
  uint64_t storage_bytes = 0;
  PyObject* storage = nullptr;
  std::string unsupported;  // kTensor: why it cannot be read (a dtype tensorkit lacks)
  uint64_t offset = 0;      // in elements
  Shape shape;
  std::vector<int64_t> stride;
};

using Kind = PyObject::Kind;

const char* kind_name(Kind k) {
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
  Unpickler(std::span<const uint8_t> data, std::string where) : data_(data), where_(std::move(where)) {}

  PyObject* run();

 private:
  PyObject* make(Kind kind) {
    arena_.emplace_back();
    arena_.back().kind = kind;
    return &arena_.back();
  }
  Error bad(const std::string& what) const {
    return invalid_input("malformed pickle: " + what + " (byte " + std::to_string(op_at_) + ")", where_);
  }
  Error refuse(const std::string& global) const {
    return invalid_input("refusing to unpickle '" + global +
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
  std::string text(uint64_t n) {
    if (n > data_.size() - pos_) throw bad("a string runs past the end");
    const uint8_t* p = take(static_cast<size_t>(n));
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  }
  std::string line() {
    const uint8_t* start = data_.data() + pos_;
    const void* nl = std::memchr(start, '\n', data_.size() - pos_);
    if (!nl) throw bad("a line runs past the end");
    size_t n = static_cast<const uint8_t*>(nl) - start;
    pos_ += n + 1;
    return std::string(reinterpret_cast<const char*>(start), n);
  }
  PyObject* pop() {
    if (stack_.size() <= floor()) throw bad("pops an empty stack");
    PyObject* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PyObject* top() {
    if (stack_.size() <= floor()) throw bad("uses an empty stack");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The objects above the last mark, which is removed.
  std::vector<PyObject*> pop_mark() {
    if (marks_.empty()) throw bad("no mark to pop to");
    std::vector<PyObject*> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push(PyObject* v) { stack_.push_back(v); }
  PyObject* integer(int64_t v) {
    PyObject* o = make(Kind::kInt);
    o->i = v;
    return o;
  }
  PyObject* tuple(std::vector<PyObject*> items) {
    PyObject* o = make(Kind::kTuple);
    o->items = std::move(items);
    return o;
  }
  void put(uint64_t index) { memo_[index] = top(); }
  PyObject* get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) throw bad("memo entry " + std::to_string(index) + " was never stored");
    return it->second;
  }
  PyObject* global(const std::string& module, const std::string& name);
  PyObject* reduce(PyObject* callable, PyObject* args);
  PyObject* rebuild_tensor(const std::vector<PyObject*>& a, bool v3);
  PyObject* persistent(PyObject* pid);
  void set_items(PyObject* dict, const std::vector<PyObject*>& kv);
  void append(PyObject* list, const std::vector<PyObject*>& items);

  std::span<const uint8_t> data_;
  std::string where_;
  size_t pos_ = 0, op_at_ = 0;
  std::deque<PyObject> arena_;
  std::vector<PyObject*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyObject*> memo_;
  std::map<std::string, PyObject*> storages_;  // by key: one object per storage

 public:
  // References from containers to their items, for bounding a walk over shared objects.
  uint64_t edges() const {
    uint64_t n = 0;
    for (const PyObject& o : arena_) n += o.items.size() + o.pairs.size();
    return n;
  }
};

PyObject* Unpickler::global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  PyObject* g = make(Kind::kGlobal);
  g->s = full;
  if (full == "collections.OrderedDict" || full == "torch._utils._rebuild_tensor_v2" ||
      full == "torch._utils._rebuild_tensor_v3" || full == "torch._utils._rebuild_parameter" ||
      full == "torch._utils._rebuild_parameter_with_state" || full == "torch.Size" || full == "torch.device")
    return g;
  if (full == "torch.storage.UntypedStorage") {
    g->untyped_storage = true;
    return g;
  }
  if (module == "torch") {
    if (auto dt = storage_dtype(name)) {
      g->dtype = dt;
      return g;
    }
    if (name.size() > 7 && name.ends_with("Storage")) return g;  // a storage of a dtype tensorkit lacks
    if (torch_dtype(name, &g->dtype)) return g;
  }
  throw refuse(full);
}

PyObject* Unpickler::persistent(PyObject* pid) {
  // ('storage', storage type, key, location, size)
  if (pid->kind != Kind::kTuple || pid->items.size() != 5 || pid->items[0]->kind != Kind::kStr ||
      pid->items[0]->s != "storage")
    throw bad("a persistent id that is not a storage");
  PyObject* type = pid->items[1];
  PyObject* key = pid->items[2];
  PyObject* size = pid->items[4];
  if (type->kind != Kind::kGlobal || key->kind != Kind::kStr || size->kind != Kind::kInt || size->i < 0)
    throw bad("a storage id with the wrong types");
  uint64_t elem = 1;
  if (!type->untyped_storage) {
    if (!type->dtype || !type->s.ends_with("Storage")) {
      PyObject* s = make(Kind::kStorage);
      s->key = key->s;
      s->unsupported = type->s + " has no tensorkit dtype";
      return s;
    }
    elem = static_cast<uint64_t>(dtype_bits(*type->dtype) / 8);
  }
  const uint64_t count = static_cast<uint64_t>(size->i);
  if (count > std::numeric_limits<uint64_t>::max() / elem) throw bad("a storage size that overflows");
  auto [it, fresh] = storages_.try_emplace(key->s, nullptr);
  if (!fresh) {
    if (it->second->storage_bytes != count * elem) throw bad("storage '" + key->s + "' with two sizes");
    return it->second;
  }
  PyObject* s = make(Kind::kStorage);
  s->key = key->s;
  s->storage_bytes = count * elem;
  s->dtype = type->dtype;
  it->second = s;
  return s;
}

// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]);
// _v3 adds the dtype after the hooks, for untyped storages.
PyObject* Unpickler::rebuild_tensor(const std::vector<PyObject*>& a, bool v3) {
  if (a.size() < (v3 ? 7u : 6u) || a.size() > (v3 ? 8u : 7u)) throw bad("a tensor rebuilt with the wrong arguments");
  PyObject* storage = a[0];
  if (storage->kind != Kind::kStorage || a[1]->kind != Kind::kInt || a[2]->kind != Kind::kTuple ||
      a[3]->kind != Kind::kTuple || a[1]->i < 0)
    throw bad("a tensor rebuilt from the wrong types");
  PyObject* t = make(Kind::kTensor);
  t->storage = storage;
  t->unsupported = storage->unsupported;
  t->dtype = storage->dtype;
  if (v3) {
    if (a[6]->kind != Kind::kGlobal) throw bad("a tensor rebuilt with a dtype that is not one");
    t->dtype = a[6]->dtype;
    if (!t->dtype) t->unsupported = a[6]->s + " has no tensorkit dtype";
  }
  if (!t->dtype && t->unsupported.empty()) throw bad("a tensor without a dtype");
  if (a[2]->items.size() != a[3]->items.size() || a[2]->items.size() > kMaxRank)
    throw bad("a tensor whose size and stride differ in rank");
  t->offset = static_cast<uint64_t>(a[1]->i);
  for (size_t k = 0; k < a[2]->items.size(); ++k) {
    PyObject* n = a[2]->items[k];
    PyObject* s = a[3]->items[k];
    if (n->kind != Kind::kInt || s->kind != Kind::kInt || n->i < 0 || s->i < 0)
      throw bad("a tensor with a negative or non-integer size or stride");
    t->shape.push_back(n->i);
    t->stride.push_back(s->i);
  }
  return t;
}

PyObject* Unpickler::reduce(PyObject* callable, PyObject* args) {
  if (callable->kind != Kind::kGlobal) throw bad(std::string("calls ") + kind_name(callable->kind));
  if (args->kind != Kind::kTuple) throw bad("call arguments that are not a tuple");
  const std::string& f = callable->s;
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
    PyObject* s = make(Kind::kStr);
    for (PyObject* x : a) {
      if (x->kind == Kind::kStr) s->s += x->s;
      if (x->kind == Kind::kInt) s->s.append(1, ':').append(std::to_string(x->i));
    }
    return s;
  }
  // A storage type or a dtype is not callable in a weights-only file.
  throw refuse(f);
}

void Unpickler::set_items(PyObject* dict, const std::vector<PyObject*>& kv) {
  if (dict->kind != Kind::kDict) throw bad(std::string("sets items of ") + kind_name(dict->kind));
  if (kv.size() % 2 != 0) throw bad("an odd number of dict items");
  for (size_t k = 0; k < kv.size(); k += 2) dict->pairs.emplace_back(kv[k], kv[k + 1]);
}

void Unpickler::append(PyObject* list, const std::vector<PyObject*>& items) {
  if (list->kind != Kind::kList) throw bad(std::string("appends to ") + kind_name(list->kind));
  list->items.insert(list->items.end(), items.begin(), items.end());
}

PyObject* Unpickler::run() {
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
      case '(': marks_.push_back(stack_.size()); break;
      case '}': push(make(Kind::kDict)); break;
      case ']': push(make(Kind::kList)); break;
      case ')': push(tuple({})); break;
      case 't': push(tuple(pop_mark())); break;
      case 0x85: push(tuple({pop()})); break;
      case 0x86: {
        PyObject* b = pop();
        PyObject* a = pop();
        push(tuple({a, b}));
        break;
      }
      case 0x87: {
        PyObject* c = pop();
        PyObject* b = pop();
        PyObject* a = pop();
        push(tuple({a, b, c}));
        break;
      }
      case 'l': {
        PyObject* l = make(Kind::kList);
        l->items = pop_mark();
        push(l);
        break;
      }
      case 'd': {
        PyObject* d = make(Kind::kDict);
        set_items(d, pop_mark());
        push(d);
        break;
      }
      case 'q': put(le(1)); break;
      case 'r': put(le(4)); break;
      case 0x94: put(memo_.size()); break;  // MEMOIZE
      case 'h': push(get(le(1))); break;
      case 'j': push(get(le(4))); break;
      case 'p':
      case 'g': {
        const std::string digits = line();
        if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
          throw bad("a memo index that is not a number");
        const uint64_t index = std::stoull(digits);
        if (op == 'p') put(index);
        else push(get(index));
        break;
      }
      case 'c': {  // GLOBAL
        std::string module = line();
        std::string name = line();
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        PyObject* name = pop();
        PyObject* module = pop();
        if (name->kind != Kind::kStr || module->kind != Kind::kStr) throw bad("a global named by non-strings");
        push(global(module->s, name->s));
        break;
      }
      case 'R': {
        PyObject* args = pop();
        PyObject* callable = pop();
        push(reduce(callable, args));
        break;
      }
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args)
        pop();
        PyObject* cls = pop();
        throw refuse(cls->kind == Kind::kGlobal ? cls->s : std::string("an object"));
      }
      case 'b': {  // BUILD: the state of an OrderedDict (a state_dict's _metadata) is dropped
        PyObject* state = pop();
        (void)state;
        PyObject* target = top();
        if (target->kind != Kind::kDict) throw bad(std::string("sets the state of ") + kind_name(target->kind));
        break;
      }
      case 'Q': push(persistent(pop())); break;
      case 'N': push(make(Kind::kNone)); break;
      case 0x88:
      case 0x89: {
        PyObject* b = make(Kind::kBool);
        b->i = op == 0x88;
        push(b);
        break;
      }
      case 'J': push(integer(static_cast<int32_t>(le(4)))); break;
      case 'K': push(integer(static_cast<int64_t>(le(1)))); break;
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
        PyObject* f = make(Kind::kFloat);
        std::memcpy(&f->f, &bits, 8);
        push(f);
        break;
      }
      case 'X':
      case 0x8c:
      case 0x8d:
      case 'T':
      case 'U':
      case 'B':
      case 'C':
      case 0x8e: {
        const bool str = op == 'X' || op == 0x8c || op == 0x8d || op == 'T' || op == 'U';
        const size_t width = op == 0x8c || op == 'U' || op == 'C' ? 1 : op == 0x8d || op == 0x8e ? 8 : 4;
        PyObject* s = make(str ? Kind::kStr : Kind::kBytes);
        s->s = text(le(width));
        push(s);
        break;
      }
      case 's': {
        PyObject* value = pop();
        PyObject* key = pop();
        set_items(top(), {key, value});
        break;
      }
      case 'u': {
        std::vector<PyObject*> kv = pop_mark();
        set_items(top(), kv);
        break;
      }
      case 'a': {
        PyObject* value = pop();
        append(top(), {value});
        break;
      }
      case 'e': {
        std::vector<PyObject*> items = pop_mark();
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

struct Found {
  std::string name;
  PyObject* tensor;
};

// The pickle of a torch.save archive: NAME/data.pkl, one level down.
bool is_pickle_entry(const std::string& name) {
  const size_t slash = name.find('/');
  return slash != std::string::npos && name.compare(slash + 1, std::string::npos, "data.pkl") == 0;
}

// Collect the tensors under `v`, named by their paths; subtrees without tensors go to
// `skipped` whole.
class Walker {
 public:
  Walker(std::string where, uint64_t edges, std::vector<Found>* found, std::vector<SkippedObject>* skipped)
      : where_(std::move(where)), budget_(4 * edges + 16), found_(found), skipped_(skipped) {}

  void walk(PyObject* v, const std::string& name, int depth) {
    // Shared containers could make the listing exponential in the file's size.
    if (budget_-- == 0) throw invalid_input("containers shared too often to list their tensors", where_);
    if (v->kind == Kind::kTensor) {
      if (!v->unsupported.empty()) {
        skipped_->push_back({name, v->unsupported});
        return;
      }
      if (!names_.insert(name).second) throw invalid_input("two tensors are named '" + name + "'", where_);
      found_->push_back({name, v});
      return;
    }
    if (v->kind != Kind::kDict && v->kind != Kind::kList && v->kind != Kind::kTuple) {
      skipped_->push_back({name, std::string(kind_name(v->kind)) + ", not a tensor"});
      return;
    }
    if (depth > kMaxDepth) throw invalid_input("containers nested deeper than " + std::to_string(kMaxDepth), where_);
    if (!on_path_.insert(v).second) throw invalid_input("a container that holds itself", where_);
    if (!has_tensor(v, 0)) {
      skipped_->push_back({name, std::string(kind_name(v->kind)) + " without tensors"});
    } else if (v->kind == Kind::kDict) {
      for (auto& [key, value] : v->pairs) {
        std::string k;
        if (key->kind == Kind::kStr) k = key->s;
        else if (key->kind == Kind::kInt) k = std::to_string(key->i);
        else throw invalid_input(std::string("a dict key that is ") + kind_name(key->kind), where_);
        walk(value, name.empty() ? k : name + "." + k, depth + 1);
      }
    } else {
      for (size_t k = 0; k < v->items.size(); ++k)
        walk(v->items[k], name.empty() ? std::to_string(k) : name + "." + std::to_string(k), depth + 1);
    }
    on_path_.erase(v);
  }

 private:
  // Whether a tensor lies under `v`; each object is looked at once (a cycle counts as
  // holding none, and walk() refuses it where it matters).
  bool has_tensor(PyObject* v, int depth) {
    if (v->kind == Kind::kTensor) return true;
    if (v->kind != Kind::kDict && v->kind != Kind::kList && v->kind != Kind::kTuple) return false;
    if (depth > kMaxDepth) throw invalid_input("containers nested deeper than " + std::to_string(kMaxDepth), where_);
    auto [it, fresh] = holds_.try_emplace(v, false);
    if (!fresh) return it->second;
    bool found = false;
    if (v->kind == Kind::kDict) {
      for (auto& kv : v->pairs) found = found || has_tensor(kv.second, depth + 1);
    } else {
      for (PyObject* x : v->items) found = found || has_tensor(x, depth + 1);
    }
    holds_[v] = found;
    return found;
  }

  std::string where_;
  uint64_t budget_;
  std::map<PyObject*, bool> holds_;
  std::vector<Found>* found_;
  std::vector<SkippedObject>* skipped_;
  std::set<std::string> names_;
  std::set<PyObject*> on_path_;
};

// Copy a strided view (strides in elements) into row-major order.
void gather(const uint8_t* src, uint8_t* dst, const Shape& shape, const std::vector<int64_t>& stride, size_t elem) {
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  uint64_t at = 0;  // source offset of the current element, in elements
  const uint64_t total = shape_numel(shape);
  for (uint64_t n = 0; n < total; ++n) {
    std::memcpy(dst, src + at * elem, elem);
    dst += elem;
    for (size_t k = rank; k-- > 0;) {
      at += static_cast<uint64_t>(stride[k]);
      if (++index[k] < shape[k]) break;
      at -= static_cast<uint64_t>(stride[k]) * static_cast<uint64_t>(shape[k]);
      index[k] = 0;
    }
  }
}

class TorchReader final : public TensorReader {
 public:
  TorchReader(std::shared_ptr<const ZipArchive> archive, std::string name, const std::string& stem)
      : archive_(std::move(archive)), name_(std::move(name)) {
    const std::string pkl = find_pickle();
    prefix_ = pkl.substr(0, pkl.size() - std::strlen("data.pkl"));
    if (auto order = archive_->find(prefix_ + "byteorder")) {
      Buffer b = archive_->read(*order);
      if (std::string_view(reinterpret_cast<const char*>(b.data()), b.size()) != "little")
        throw invalid_input("unsupported PyTorch checkpoint: big-endian storages", name_);
    }
    Buffer pickle = archive_->read(*archive_->find(pkl));
    Unpickler unpickler({pickle.data(), pickle.size()}, name_ + ": " + pkl);
    PyObject* root = unpickler.run();
    std::vector<Found> found;
    Walker(name_, unpickler.edges(), &found, &skipped_).walk(root, root->kind == Kind::kTensor ? stem : std::string(), 0);
    for (const Found& f : found) add(f);  // while the unpickler's objects live
  }

  FileFormat format() const override { return FileFormat::kTorch; }
  bool random_access() const override { return true; }

  Tensor read(size_t index) override {
    const View& v = views_.at(index);
    const TensorInfo& info = infos_[index];
    const std::string where = name_ + ": tensor '" + info.name + "'";
    try {
      Buffer storage = archive_->read(v.entry);  // its size was checked when listed
      const size_t elem = static_cast<size_t>(dtype_bits(info.dtype) / 8);
      const uint64_t start = v.offset * elem;
      const bool aligned = reinterpret_cast<uintptr_t>(storage.data() + start) % dtype_traits(info.dtype).alignment == 0;
      if (v.contiguous && aligned) return Tensor(info.dtype, info.shape, storage.slice(start, info.nbytes));
      Tensor out = Tensor::empty(info.dtype, info.shape);
      if (v.contiguous) std::memcpy(out.mutable_data(), storage.data() + start, info.nbytes);
      else if (info.nbytes) gather(storage.data() + start, out.mutable_data(), info.shape, v.stride, elem);
      return out;
    } catch (const Error& e) {
      if (!e.where().empty()) throw;
      throw e.with_context(where);
    }
  }

 private:
  // Where a listed tensor's elements lie: its storage's entry, and the view into it.
  struct View {
    size_t entry;
    uint64_t offset;
    std::vector<int64_t> stride;
    bool contiguous;
  };

  std::string find_pickle() const {
    std::string pkl;
    for (const ZipEntry& e : archive_->entries()) {
      if (!is_pickle_entry(e.name)) continue;
      if (!pkl.empty()) throw invalid_input("a PyTorch archive with two data.pkl records", name_);
      pkl = e.name;
    }
    if (pkl.empty()) throw invalid_input("a zip archive without data.pkl is not a PyTorch checkpoint", name_);
    return pkl;
  }

  void add(const Found& f) {
    PyObject* t = f.tensor;
    const std::string where = name_ + ": tensor '" + f.name + "'";
    TensorInfo info;
    info.name = f.name;
    info.dtype = *t->dtype;
    info.shape = t->shape;
    const uint64_t numel = shape_numel(info.shape);
    info.nbytes = dtype_storage_bytes(info.dtype, numel);
    const uint64_t elem = static_cast<uint64_t>(dtype_bits(info.dtype) / 8);
    const std::string& key = t->storage->key;
    const uint64_t storage_bytes = t->storage->storage_bytes;
    View v;
    v.offset = t->offset;
    v.stride = t->stride;
    auto entry = archive_->find(prefix_ + "data/" + key);
    if (!entry) throw invalid_input("storage '" + key + "' is not in the archive", where);
    v.entry = *entry;
    // The last element the view reaches, which must lie inside the storage.
    uint64_t last = v.offset;
    v.contiguous = true;
    uint64_t expect = 1;
    for (size_t k = info.shape.size(); k-- > 0;) {
      const uint64_t n = static_cast<uint64_t>(info.shape[k]), s = static_cast<uint64_t>(t->stride[k]);
      if (n > 1 && s != expect) v.contiguous = false;
      expect *= n;
      if (n > 0 && s > 0 && (n - 1) > (std::numeric_limits<uint64_t>::max() / 4 - last) / s)
        throw invalid_input("a tensor view that overflows", where);
      if (n > 0) last += (n - 1) * s;
    }
    if (numel > 0 && (last >= std::numeric_limits<uint64_t>::max() / elem || (last + 1) * elem > storage_bytes))
      throw invalid_input("tensor view reaches past its storage '" + key + "' (" + std::to_string(storage_bytes) +
                              " bytes)",
                          where);
    if (archive_->entries()[v.entry].bytes != storage_bytes)
      throw invalid_input("storage '" + key + "' holds " + std::to_string(archive_->entries()[v.entry].bytes) +
                              " bytes, not the " + std::to_string(storage_bytes) + " its id declares",
                          where);
    infos_.push_back(std::move(info));
    views_.push_back(std::move(v));
  }

  std::shared_ptr<const ZipArchive> archive_;
  std::string name_, prefix_;
  std::vector<View> views_;
};

}  // namespace

bool torch_is_archive(const ZipArchive& archive) {
  return std::any_of(archive.entries().begin(), archive.entries().end(),
                     [](const ZipEntry& e) { return is_pickle_entry(e.name); });
}

std::unique_ptr<TensorReader> torch_open(std::shared_ptr<const ZipArchive> archive, const std::string& name,
                                         const std::string& stem) {
  return std::make_unique<TorchReader>(std::move(archive), name, stem);
}

std::string torch_legacy_message() {
  return "a pickle, not a PyTorch zip checkpoint: only the zip format of torch.save (PyTorch 1.6 and later) is "
         "read; load it with torch and save it again, or as safetensors";
}

}  // namespace tk::io
