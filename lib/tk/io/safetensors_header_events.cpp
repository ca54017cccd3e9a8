// The safetensors header's hot path: the tensor table built straight from the JSON
// policy's parse events, with no DOM (a header of 10^6 tensors would otherwise cost
// about ten allocations per tensor). Only headers the reference accepts take this path
// to the end; anything unusual gives up and leaves the naming of the problem to the
// member-by-member parser in safetensors_header.cpp.
#include <limits>
#include <unordered_set>

#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io::detail {

namespace {

// Thrown by the sink to leave the fast path.
struct GiveUp {};

class TableSink {
 public:
  TableSink(std::vector<HeaderEntry>& entries, Metadata& metadata, size_t text_bytes)
      : entries_(entries), metadata_(metadata) {
    // An entry takes at least ~50 bytes of text; reserving avoids rehashing as it grows.
    names_.reserve(text_bytes / 64);
  }

  void null() { scalar(Scalar::kNull); }
  void boolean(bool) { scalar(Scalar::kOther); }
  void number_integer(int64_t) { scalar(Scalar::kOther); }
  void number_float(double) { scalar(Scalar::kOther); }
  void number_unsigned(uint64_t v) {
    if (skipping()) return;
    if (depth_ != 3) return scalar(Scalar::kOther);
    if (field_ == Field::kShape) {
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) throw GiveUp{};
      entry_.info.shape.push_back(static_cast<int64_t>(v));
    } else {
      if (offsets_ == 2) throw GiveUp{};
      (offsets_++ == 0 ? entry_.begin : entry_.end) = v;
    }
  }
  void string(std::string& v) {
    if (skipping()) return;
    if (depth_ == 2 && section_ == Section::kMetadata) {
      metadata_[meta_key_] = std::move(v);
    } else if (depth_ == 2 && field_ == Field::kDtype) {
      auto dtype = dtype_from_safetensors_name(v);
      if (!dtype) throw GiveUp{};
      entry_.info.dtype = *dtype;
    } else {
      scalar(Scalar::kString);
    }
  }

  void start_object() {
    if (skipping() || skip_value()) return ++depth_, void();
    if (depth_ == 1 && section_ == Section::kEntry) {
      entry_ = HeaderEntry{};
      entry_.info.name = std::move(name_);
      seen_ = 0;
      offsets_ = 0;
    } else if (depth_ == 1 && section_ == Section::kMetadata) {
      // an object of strings; each key replaces any earlier value, as in a DOM
    } else if (depth_ != 0) {
      throw GiveUp{};
    }
    ++depth_;
  }
  void start_array() {
    if (skipping() || skip_value()) return ++depth_, void();
    if (depth_ != 2 || section_ != Section::kEntry || field_ == Field::kDtype) throw GiveUp{};
    ++depth_;
  }
  void end_array() {
    --depth_;
    if (skipping()) return end_skip();
    if (depth_ == 2 && field_ == Field::kOffsets && offsets_ != 2) throw GiveUp{};
  }
  void end_object() {
    --depth_;
    if (skipping()) return end_skip();
    if (depth_ == 1 && section_ == Section::kEntry) finish_entry();
  }

  void key(std::string& k, int depth) {
    if (skipping()) return;
    if (depth == 1) return top_key(k);
    if (section_ == Section::kMetadata) {
      meta_key_ = std::move(k);
      return;
    }
    static const char* const kFields[3] = {"dtype", "shape", "data_offsets"};
    field_ = Field::kOther;
    for (int i = 0; i < 3; ++i) {
      if (k != kFields[i]) continue;
      if (seen_ & (1u << i)) throw GiveUp{};  // duplicate field
      seen_ |= 1u << i;
      field_ = static_cast<Field>(i);
    }
  }

 private:
  enum class Section { kNone, kEntry, kMetadata };
  enum class Field { kDtype, kShape, kOffsets, kOther };
  enum class Scalar { kNull, kString, kOther };

  void top_key(std::string& k) {
    if (k == "__metadata__") {
      if (have_metadata_) throw GiveUp{};
      have_metadata_ = true;
      section_ = Section::kMetadata;
      return;
    }
    if (!names_.insert(k).second) throw GiveUp{};  // duplicate tensor name
    section_ = Section::kEntry;
    name_ = std::move(k);
  }

  // A scalar outside shape and data_offsets: only an unknown field's value, or null
  // metadata, is fine.
  void scalar(Scalar kind) {
    if (skipping()) return;
    if (depth_ == 2 && section_ == Section::kEntry && field_ == Field::kOther) return;
    if (depth_ == 1 && section_ == Section::kMetadata && kind == Scalar::kNull) return;  // "no metadata"
    throw GiveUp{};
  }

  // Unknown fields of an entry are ignored, as the reference does; their values may
  // be containers, whose contents are skipped.
  bool skip_value() {
    if (depth_ != 2 || section_ != Section::kEntry || field_ != Field::kOther) return false;
    skip_from_ = depth_;
    return true;
  }
  bool skipping() const { return skip_from_ >= 0; }
  void end_skip() {
    if (depth_ == skip_from_) skip_from_ = -1;
  }

  void finish_entry() {
    if (seen_ != 7 || offsets_ != 2) throw GiveUp{};
    try {
      entry_.info.nbytes = dtype_storage_bytes(entry_.info.dtype, shape_numel(entry_.info.shape));
    } catch (const Error&) {
      throw GiveUp{};
    }
    entries_.push_back(std::move(entry_));
  }

  std::vector<HeaderEntry>& entries_;
  Metadata& metadata_;
  std::unordered_set<std::string> names_;
  int depth_ = 0;
  int skip_from_ = -1;  // depth at which the skipped container opened, or -1
  Section section_ = Section::kNone;
  Field field_ = Field::kOther;
  unsigned seen_ = 0;  // bit i: kFields[i] seen in this entry
  int offsets_ = 0;
  bool have_metadata_ = false;
  std::string name_, meta_key_;
  HeaderEntry entry_;
};

}  // namespace

bool header_table_from_events(std::string_view text, std::vector<HeaderEntry>& entries, Metadata& metadata) {
  TableSink sink(entries, metadata, text.size());
  try {
    json_parse_events(text, "header", sink);
  } catch (const GiveUp&) {
    return false;
  }
  return true;
}

}  // namespace tk::io::detail
