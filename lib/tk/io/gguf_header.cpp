// GGUF headers: parsing with every claim bounded before it is believed, the text of a
// value, and encoding.
#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/gguf_internal.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io {

namespace {

using detail::tensor_where;

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint32_t kMaxDims = 4;          // ggml's GGML_MAX_DIMS
constexpr uint64_t kMaxKeyBytes = 65535;  // keys and tensor names
constexpr size_t kReadStep = size_t{1} << 20;
constexpr const char* kAlignmentKey = "general.alignment";
// No file holds more bytes than off_t counts: offsets and ends beyond are refused, so
// that their sums (rounded up to an alignment too) cannot overflow.
constexpr uint64_t kMaxFileOffset = static_cast<uint64_t>(INT64_MAX);

// Size of a scalar value type, 0 for strings and arrays; nullopt for unknown types.
std::optional<uint32_t> scalar_bytes(uint32_t type) {
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kBool: return 1;
    case GgufValueType::kU16: case GgufValueType::kI16: return 2;
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kF32: return 4;
    case GgufValueType::kU64: case GgufValueType::kI64: case GgufValueType::kF64: return 8;
    case GgufValueType::kString: case GgufValueType::kArray: return 0;
  }
  return std::nullopt;
}

// The header's bytes as they are consumed: every length is checked against what the
// file can still hold (when its size is known) and against kGgufMaxHeader, and memory
// grows with the bytes that arrive.
class Cursor {
 public:
  Cursor(InputStream& in, std::optional<uint64_t> file_size) : in_(in), size_(file_size) {}

  uint64_t used() const { return used_; }

  void read(void* dst, size_t n, const char* what) {
    need(n, what);
    in_.read_exact(dst, n, what);
    used_ += n;
  }

  void need(uint64_t n, const char* what) {
    if (n > kGgufMaxHeader - std::min(used_, kGgufMaxHeader))
      throw invalid_input(fmt::format("{} of {} bytes exceeds the header limit of {} bytes", what, n, kGgufMaxHeader));
    if (size_ && n > *size_ - std::min(used_, *size_))
      throw invalid_input(fmt::format("{} of {} bytes extends past the end of the file", what, n));
  }

  // Append `n` bytes to `out`.
  void take(uint64_t n, std::vector<uint8_t>& out, const char* what) {
    need(n, what);
    while (n > 0) {
      size_t step = static_cast<size_t>(std::min<uint64_t>(n, kReadStep));
      size_t at = out.size();
      out.resize(at + step);
      in_.read_exact(out.data() + at, step, what);
      used_ += step;
      n -= step;
    }
  }

  template <typename T> T scalar(const char* what) {
    uint8_t b[sizeof(T)];
    read(b, sizeof(T), what);
    return load_le<T>(b);
  }

  // A string (u64 length, bytes), its encoding appended to `raw` when given.
  std::string string(const char* what, uint64_t max_bytes, std::vector<uint8_t>* raw = nullptr) {
    uint64_t n = scalar<uint64_t>(what);
    if (n > max_bytes) throw invalid_input(fmt::format("{} of {} bytes exceeds the limit of {}", what, n, max_bytes));
    std::vector<uint8_t> bytes;
    take(n, bytes, what);
    if (raw) {
      uint8_t len[8];
      store_le(len, n);
      raw->insert(raw->end(), len, len + 8);
      raw->insert(raw->end(), bytes.begin(), bytes.end());
    }
    return std::string(bytes.begin(), bytes.end());
  }

 private:
  InputStream& in_;
  std::optional<uint64_t> size_;
  uint64_t used_ = 0;
};

void check_bools(const std::vector<uint8_t>& bytes, size_t from) {
  for (size_t i = from; i < bytes.size(); ++i)
    if (bytes[i] > 1) throw invalid_input(fmt::format("bool value {} is neither 0 nor 1", bytes[i]));
}

// One value of `type` appended to `raw`.
void read_value(Cursor& c, uint32_t type, std::vector<uint8_t>& raw, bool in_array) {
  std::optional<uint32_t> width = scalar_bytes(type);
  if (!width) throw invalid_input(fmt::format("unknown value type {}", type));
  if (*width > 0) {
    size_t from = raw.size();
    c.take(*width, raw, "value");
    if (static_cast<GgufValueType>(type) == GgufValueType::kBool) check_bools(raw, from);
    return;
  }
  if (static_cast<GgufValueType>(type) == GgufValueType::kString) {
    c.string("string value", kGgufMaxHeader, &raw);
    return;
  }
  if (in_array) throw invalid_input("nested arrays are not supported");
  uint32_t elem = c.scalar<uint32_t>("array element type");
  uint64_t count = c.scalar<uint64_t>("array length");
  uint8_t head[12];
  store_le(head, elem);
  store_le(head + 4, count);
  raw.insert(raw.end(), head, head + 12);
  std::optional<uint32_t> elem_width = scalar_bytes(elem);
  if (!elem_width) throw invalid_input(fmt::format("unknown array element type {}", elem));
  if (static_cast<GgufValueType>(elem) == GgufValueType::kArray) throw invalid_input("nested arrays are not supported");
  if (*elem_width > 0) {
    if (count > kGgufMaxHeader / *elem_width) throw invalid_input(fmt::format("array of {} elements is too long", count));
    size_t from = raw.size();
    c.take(count * *elem_width, raw, "array");
    if (static_cast<GgufValueType>(elem) == GgufValueType::kBool) check_bools(raw, from);
    return;
  }
  // Strings: each needs at least its 8-byte length.
  c.need(count > kGgufMaxHeader / 8 ? kGgufMaxHeader : count * 8, "array of strings");
  for (uint64_t i = 0; i < count; ++i) c.string("string element", kGgufMaxHeader, &raw);
}

uint32_t read_version(Cursor& c) {
  uint32_t version = c.scalar<uint32_t>("version");
  if (version == 2 || version == 3) return version;
  if (version == 1) throw invalid_input("GGUF version 1 is not supported (versions 2 and 3 are)");
  // A big-endian writer stores 3 as 03 00 00 00 read backwards.
  if (version == 0x02000000 || version == 0x03000000)
    throw invalid_input("big-endian GGUF is not supported");
  throw invalid_input(fmt::format("unknown GGUF version {} (versions 2 and 3 are read)", version));
}

uint32_t alignment_of(const GgufKv& kv) {
  if (kv.type != GgufValueType::kU32) throw invalid_input("general.alignment is not a u32");
  uint32_t a = load_le<uint32_t>(kv.value.data());
  if (a == 0 || !std::has_single_bit(a)) throw invalid_input(fmt::format("general.alignment {} is not a power of two", a));
  return a;
}

// GGUF strings are UTF-8; gguf-py refuses a key or tensor name that is not, and so do
// the formats a name is converted into (a safetensors header, JSON metadata).
void check_utf8(const std::string& s, const char* what) {
  const size_t bad = detail::utf8_invalid_at({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  if (bad != s.size()) throw invalid_input(fmt::format("{} is not valid UTF-8 (byte {})", what, bad));
}

// A key or name for a location: shortened, and with its bytes escaped by the tool.
std::string shown(const std::string& s) { return s.substr(0, 96); }

GgufTensor read_tensor(Cursor& c, uint32_t alignment) {
  GgufTensor t;
  t.name = c.string("tensor name", kMaxKeyBytes);
  try {
    check_utf8(t.name, "tensor name");
    uint32_t n_dims = c.scalar<uint32_t>("dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      throw invalid_input(fmt::format("{} dimensions (GGUF holds 1 to {})", n_dims, kMaxDims));
    std::vector<uint64_t> dims(n_dims);
    uint64_t numel = 1;
    for (auto& d : dims) {
      d = c.scalar<uint64_t>("dimension");
      if (d > static_cast<uint64_t>(INT64_MAX) || (d != 0 && numel > static_cast<uint64_t>(INT64_MAX) / d))
        throw invalid_input("shape too large (its element count overflows)");
      numel *= d;
    }
    uint32_t type = c.scalar<uint32_t>("tensor type");
    const GgmlTypeTraits* traits = ggml_type_traits(type);
    if (!traits) throw invalid_input(fmt::format("unknown ggml type {}", type));
    t.type = traits->type;
    if (dims[0] % traits->block != 0)
      throw invalid_input(fmt::format("innermost dimension {} is not a whole number of {} blocks of {}", dims[0],
                                      traits->name, traits->block));
    t.nbytes = ggml_storage_bytes(t.type, numel);
    t.offset = c.scalar<uint64_t>("tensor offset");
    if (t.offset % alignment != 0)
      throw invalid_input(fmt::format("offset {} is not a multiple of the alignment {}", t.offset, alignment));
    t.shape.assign(dims.rbegin(), dims.rend());
  } catch (const Error& e) {
    throw e.with_context(tensor_where(t.name));
  }
  return t;
}

}  // namespace

namespace detail {

GgufHeader gguf_parse_header(InputStream& in, std::optional<uint64_t> file_size) {
  Cursor c(in, file_size);
  uint8_t magic[4];
  c.read(magic, 4, "magic");
  if (std::memcmp(magic, kMagic, 4) != 0) throw invalid_input("not a GGUF file (no GGUF magic)");
  GgufHeader h;
  h.version = read_version(c);
  const uint64_t n_tensors = c.scalar<uint64_t>("tensor count");
  const uint64_t n_kv = c.scalar<uint64_t>("key-value count");
  // Each pair takes at least 13 bytes and each tensor record 32: a count beyond what the
  // header limit (or the file) holds is refused before anything is allocated for it.
  c.need(n_kv > kGgufMaxHeader / 13 ? kGgufMaxHeader : n_kv * 13, "key-value pairs");
  c.need(n_tensors > kGgufMaxHeader / 32 ? kGgufMaxHeader : n_kv * 13 + n_tensors * 32, "tensor records");

  std::set<std::string, std::less<>> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    GgufKv kv;
    kv.key = c.string("key", kMaxKeyBytes);
    try {
      check_utf8(kv.key, "key");
      if (!keys.insert(kv.key).second) throw invalid_input("duplicate key");
      uint32_t type = c.scalar<uint32_t>("value type");
      read_value(c, type, kv.value, false);
      kv.type = static_cast<GgufValueType>(type);
      if (kv.key == kAlignmentKey) h.alignment = alignment_of(kv);
    } catch (const Error& e) {
      throw e.with_context("key '" + shown(kv.key) + "'");
    }
    h.kvs.push_back(std::move(kv));
  }

  std::set<std::string, std::less<>> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t = read_tensor(c, h.alignment);
    if (!names.insert(t.name).second) throw invalid_input("duplicate tensor name", tensor_where(t.name));
    h.tensors.push_back(std::move(t));
  }
  std::stable_sort(h.tensors.begin(), h.tensors.end(),
                   [](const GgufTensor& a, const GgufTensor& b) { return a.offset < b.offset; });
  // Tensors of no bytes hold no data: they overlap nothing and end nothing.
  const GgufTensor* previous = nullptr;
  for (const GgufTensor& t : h.tensors) {
    if (t.nbytes == 0) continue;
    if (t.nbytes > kMaxFileOffset - t.offset)
      throw invalid_input(fmt::format("data at offset {} of {} bytes lies past the end of any file", t.offset,
                                      t.nbytes),
                          tensor_where(t.name));
    if (previous && t.offset < previous->offset + previous->nbytes)
      throw invalid_input("overlaps tensor '" + shown(previous->name) + "'", tensor_where(t.name));
    previous = &t;
    h.data_end = std::max(h.data_end, t.offset + t.nbytes);
  }
  h.data_start = (c.used() + h.alignment - 1) / h.alignment * h.alignment;
  if (h.data_end > kMaxFileOffset - h.data_start)
    throw invalid_input(fmt::format("data of {} bytes after {} bytes of header lies past the end of any file",
                                    h.data_end, h.data_start));
  return h;
}

void gguf_check_extent(const GgufHeader& h, uint64_t data_bytes) {
  for (const auto& t : h.tensors)
    if (t.nbytes > 0 && (t.offset > data_bytes || t.nbytes > data_bytes - t.offset))
      throw invalid_input(fmt::format("data at [{}, {}) lies past the end of the file ({} bytes of data)", t.offset,
                                      t.offset + t.nbytes, data_bytes),
                          tensor_where(t.name));
  const uint64_t padded = (h.data_end + h.alignment - 1) / h.alignment * h.alignment;
  if (data_bytes > padded)
    throw invalid_input(fmt::format("{} trailing bytes after the last tensor", data_bytes - h.data_end));
}

}  // namespace detail

GgufKv gguf_kv_string(std::string key, std::string_view value) {
  GgufKv kv{std::move(key), GgufValueType::kString, std::vector<uint8_t>(8 + value.size())};
  store_le<uint64_t>(kv.value.data(), value.size());
  std::memcpy(kv.value.data() + 8, value.data(), value.size());
  return kv;
}

GgufKv gguf_kv_u32(std::string key, uint32_t value) {
  GgufKv kv{std::move(key), GgufValueType::kU32, std::vector<uint8_t>(4)};
  store_le(kv.value.data(), value);
  return kv;
}

std::optional<std::string> gguf_kv_string_value(const GgufKv& kv) {
  if (kv.type != GgufValueType::kString || kv.value.size() < 8) return std::nullopt;
  return std::string(kv.value.begin() + 8, kv.value.end());
}

std::optional<uint64_t> gguf_kv_uint_value(const GgufKv& kv) {
  switch (kv.type) {
    case GgufValueType::kU8: return kv.value.at(0);
    case GgufValueType::kU16: return load_le<uint16_t>(kv.value.data());
    case GgufValueType::kU32: return load_le<uint32_t>(kv.value.data());
    case GgufValueType::kU64: return load_le<uint64_t>(kv.value.data());
    default: return std::nullopt;
  }
}

const char* gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8: return "u8";
    case GgufValueType::kI8: return "i8";
    case GgufValueType::kU16: return "u16";
    case GgufValueType::kI16: return "i16";
    case GgufValueType::kU32: return "u32";
    case GgufValueType::kI32: return "i32";
    case GgufValueType::kF32: return "f32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kU64: return "u64";
    case GgufValueType::kI64: return "i64";
    case GgufValueType::kF64: return "f64";
  }
  return "unknown";
}

namespace {

// The text of one scalar or string of `type` at `p`; advances p.
std::string element_text(GgufValueType type, const uint8_t*& p) {
  auto take = [&p]<typename T>(T) {
    T v = load_le<T>(p);
    p += sizeof(T);
    return v;
  };
  switch (type) {
    case GgufValueType::kU8: return std::to_string(take(uint8_t{}));
    case GgufValueType::kI8: return std::to_string(static_cast<int8_t>(take(uint8_t{})));
    case GgufValueType::kU16: return std::to_string(take(uint16_t{}));
    case GgufValueType::kI16: return std::to_string(static_cast<int16_t>(take(uint16_t{})));
    case GgufValueType::kU32: return std::to_string(take(uint32_t{}));
    case GgufValueType::kI32: return std::to_string(static_cast<int32_t>(take(uint32_t{})));
    case GgufValueType::kU64: return std::to_string(take(uint64_t{}));
    case GgufValueType::kI64: return std::to_string(static_cast<int64_t>(take(uint64_t{})));
    case GgufValueType::kF32: return fmt::format("{}", std::bit_cast<float>(take(uint32_t{})));
    case GgufValueType::kF64: return fmt::format("{}", std::bit_cast<double>(take(uint64_t{})));
    case GgufValueType::kBool: return take(uint8_t{}) ? "true" : "false";
    case GgufValueType::kString: {
      uint64_t n = take(uint64_t{});
      std::string s(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
      p += n;
      return s;
    }
    case GgufValueType::kArray: break;
  }
  return "?";
}

}  // namespace

std::string gguf_value_text(const GgufKv& kv, size_t max_items) {
  const uint8_t* p = kv.value.data();
  if (kv.type != GgufValueType::kArray) return element_text(kv.type, p);
  const auto elem = static_cast<GgufValueType>(load_le<uint32_t>(p));
  const uint64_t count = load_le<uint64_t>(p + 4);
  p += 12;
  std::string out = fmt::format("[{} x {}", count, gguf_value_type_name(elem));
  for (uint64_t i = 0; i < std::min<uint64_t>(count, max_items); ++i) out += (i ? ", " : ": ") + element_text(elem, p);
  return out + (count > max_items ? ", ...]" : "]");
}

std::vector<uint8_t> gguf_make_header(const std::vector<GgufTensorDecl>& tensors, const std::vector<GgufKv>& kvs,
                                      std::vector<uint64_t>* offsets) {
  uint32_t alignment = kGgufDefaultAlignment;
  for (const auto& kv : kvs)
    if (kv.key == kAlignmentKey) alignment = alignment_of(kv);
  if (alignment > kGgufMaxAlignment)
    throw usage_error(fmt::format("general.alignment {} is larger than the {} bytes written", alignment,
                                  kGgufMaxAlignment));
  std::vector<uint8_t> out(kMagic, kMagic + 4);
  auto put = [&out]<typename T>(T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    store_le(out.data() + at, v);
  };
  auto put_string = [&](std::string_view s) {
    put(uint64_t{s.size()});
    out.insert(out.end(), s.begin(), s.end());
  };
  put(uint32_t{3});
  put(uint64_t{tensors.size()});
  put(uint64_t{kvs.size()});
  for (const auto& kv : kvs) {
    put_string(kv.key);
    put(static_cast<uint32_t>(kv.type));
    out.insert(out.end(), kv.value.begin(), kv.value.end());
  }
  uint64_t offset = 0;
  if (offsets) offsets->clear();
  for (const auto& t : tensors) {
    put_string(t.name);
    put(static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put(static_cast<uint64_t>(*d));
    put(static_cast<uint32_t>(t.type));
    put(offset);
    if (offsets) offsets->push_back(offset);
    uint64_t n = ggml_storage_bytes(t.type, shape_numel(t.shape));
    offset += (n + alignment - 1) / alignment * alignment;
  }
  out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
  return out;
}

}  // namespace tk::io
