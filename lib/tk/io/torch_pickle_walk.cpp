#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/torch_pickle_object.h"

namespace tk::io::pickle {

namespace {

// Collect the tensors under a value, named by their paths; subtrees without tensors go
// to the skipped list whole. Every name it keeps is charged to the budget, so that a
// long key shared by many paths cannot multiply into gigabytes of names.
class Walker {
 public:
  Walker(std::string where, uint64_t edges, MemoryBudget& budget, PickleContents* out)
      : where_(std::move(where)), visits_(4 * edges + 16), budget_(budget), out_(out) {}

  void walk(Object* v, const std::string& name, int depth) {
    // Shared containers could make the listing exponential in the file's size.
    if (visits_-- == 0) throw invalid_input("containers shared too often to list their tensors", where_);
    if (v->kind == Kind::kTensor) return tensor(v, name);
    if (v->kind != Kind::kDict && v->kind != Kind::kList && v->kind != Kind::kTuple)
      return skip(name, std::string(kind_name(v->kind)) + ", not a tensor");
    if (depth > kMaxDepth) throw invalid_input("containers nested deeper than " + std::to_string(kMaxDepth), where_);
    if (v->on_path) throw invalid_input("a container that holds itself", where_);
    if (!has_tensor(v, 0)) return skip(name, std::string(kind_name(v->kind)) + " without tensors");
    v->on_path = true;
    // The names of the children exist one at a time, each charged while it does.
    auto child = [&](Object* item, std::string_view key) {
      std::string path = name.empty() ? std::string(key) : name + "." + std::string(key);
      budget_.charge(path.size());
      walk(item, path, depth + 1);
      budget_.refund(path.size());
    };
    if (v->kind == Kind::kDict) {
      uint64_t charged = 0;  // the dict's entries, while they exist
      for (auto& [key, value] : dict_entries(v, &charged)) child(value, key);
      budget_.refund(charged);
    } else {
      for (size_t k = 0; k < v->items.size(); ++k) child(v->items[k], std::to_string(k));
    }
    v->on_path = false;
  }

 private:
  void tensor(Object* v, const std::string& name) {
    const TensorPart& p = *v->t;
    if (!p.unsupported.empty()) return skip(name, std::string(p.unsupported));
    // Twice: once here, once in the reader's listing (TensorInfo and view) made from it.
    budget_.charge(2 * (sizeof(PickledTensor) + 2 * name.size() + p.storage->t->key.size() + kNodeBytes +
                        p.shape.size() * 2 * sizeof(int64_t)));
    if (!names_.insert(name).second) throw invalid_input("two tensors are named '" + name + "'", where_);
    PickledTensor t;
    t.name = name;
    t.storage_key = p.storage->t->key;
    t.storage_bytes = p.storage->t->storage_bytes;
    t.dtype = *v->dtype;
    t.offset = p.offset;
    t.shape = p.shape;
    t.stride = p.stride;
    out_->tensors.push_back(std::move(t));
  }

  void skip(const std::string& name, std::string reason) {
    budget_.charge(2 * sizeof(SkippedObject) + name.size() + reason.size());
    out_->skipped.push_back({name, std::move(reason)});
  }

  // The items of a dict as Python holds them: a key given twice keeps its first place
  // and its last value.
  std::vector<std::pair<std::string, Object*>> dict_entries(Object* dict, uint64_t* charged) {
    std::vector<std::pair<std::string, Object*>> entries;
    std::unordered_map<std::string, size_t> at;
    for (size_t k = 0; k + 1 < dict->items.size(); k += 2) {
      Object* key = dict->items[k];
      std::string text;
      if (key->kind == Kind::kStr) text = key->s;
      else if (key->kind == Kind::kInt) text = std::to_string(key->i);
      else throw invalid_input(std::string("a dict key that is ") + kind_name(key->kind), where_);
      auto [it, fresh] = at.try_emplace(text, entries.size());
      if (!fresh) {
        entries[it->second].second = dict->items[k + 1];
        continue;
      }
      const uint64_t cost = 2 * (text.size() + kNodeBytes);
      budget_.charge(cost);
      *charged += cost;
      entries.emplace_back(std::move(text), dict->items[k + 1]);
    }
    return entries;
  }

  // Whether a tensor lies under `v`; each object is looked at once (a cycle counts as
  // holding none, and walk() refuses it where it matters).
  bool has_tensor(Object* v, int depth) {
    if (v->kind == Kind::kTensor) return true;
    if (v->kind != Kind::kDict && v->kind != Kind::kList && v->kind != Kind::kTuple) return false;
    if (depth > kMaxDepth) throw invalid_input("containers nested deeper than " + std::to_string(kMaxDepth), where_);
    if (v->holds_tensor >= 0) return v->holds_tensor == 1;
    v->holds_tensor = 0;
    bool found = false;
    for (size_t k = v->kind == Kind::kDict ? 1 : 0; k < v->items.size() && !found;
         k += v->kind == Kind::kDict ? 2 : 1)
      found = has_tensor(v->items[k], depth + 1);
    v->holds_tensor = found ? 1 : 0;
    return found;
  }

  std::string where_;
  uint64_t visits_;
  MemoryBudget& budget_;
  PickleContents* out_;
  std::unordered_set<std::string> names_;
};

}  // namespace

void walk(Object* root, const std::string& stem, uint64_t edges, const std::string& where, MemoryBudget& budget,
          PickleContents* out) {
  Walker(where, edges, budget, out).walk(root, root->kind == Kind::kTensor ? stem : std::string(), 0);
}

}  // namespace tk::io::pickle
