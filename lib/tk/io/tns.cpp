// FROSTT .tns reading and writing. The reader maps the file (or reads a pipe, or inflates
// gzip into memory) and parses it in one pass with a hand-rolled integer scanner and
// std::from_chars for the values: no iostreams, no per-line allocation.
#include "tk/io/tns.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cctype>
#include <cstring>
#include <memory>

#include "tk/core/buffer.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"
#include "tk/io/tensor_file.h"

namespace tk::io {
namespace {

bool is_gzip(const uint8_t* data, size_t size) { return size >= 2 && data[0] == 0x1f && data[1] == 0x8b; }

// Inflate a whole gzip stream (concatenated members included) into memory.
std::vector<char> inflate_gzip(const uint8_t* data, size_t size, const std::string& name) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw unavailable("zlib could not be initialised", name);
  std::vector<char> out(std::max<size_t>(size * 4, 1 << 16));
  size_t have = 0;
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(std::min<size_t>(size, UINT32_MAX));
  size_t consumed_before = 0;
  for (;;) {
    if (have == out.size()) out.resize(out.size() * 2);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - have, UINT32_MAX));
    const uInt avail_out_before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    have += avail_out_before - z.avail_out;
    const size_t consumed = consumed_before + (z.next_in - (data + consumed_before));
    if (z.avail_in == 0 && consumed < size) {  // refill past 4 GiB of input
      consumed_before = consumed;
      z.next_in = const_cast<Bytef*>(data + consumed);
      z.avail_in = static_cast<uInt>(std::min<size_t>(size - consumed, UINT32_MAX));
    }
    if (rc == Z_STREAM_END) {
      if (consumed >= size || !is_gzip(data + consumed, size - consumed)) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      inflateEnd(&z);
      throw invalid_input("truncated gzip stream", name);
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      inflateEnd(&z);
      throw invalid_input(std::string("corrupt gzip stream: ") + (z.msg ? z.msg : "inflate failed"), name);
    }
  }
  inflateEnd(&z);
  out.resize(have);
  return out;
}

// One pass over the text. Fields are kept as read (base decided at the end).
class TnsParser {
 public:
  // `file` is where the whole text begins, when `begin` starts a later part of it: a
  // failure's line number then counts the lines before the part (only then).
  TnsParser(const char* begin, const char* end, std::string name, const char* file = nullptr)
      : p_(begin), begin_(begin), end_(end), file_(file ? file : begin), name_(std::move(name)) {}

  void parse(SparseTensor& t) {
    while (p_ < end_) {
      ++line_;
      skip_blanks();
      if (p_ < end_ && *p_ != '\n' && *p_ != '#' && *p_ != '\r') parse_entry(t);
      skip_to_next_line();
    }
  }

  int order() const { return order_; }
  const std::vector<int64_t>& max_index() const { return max_index_; }
  const std::vector<int64_t>& max_index_line() const { return max_index_line_; }
  bool saw_zero() const { return saw_zero_; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    const int64_t before = std::count(file_, begin_, '\n');
    throw invalid_input(what, name_ + ": line " + std::to_string(before + line_));
  }

  void skip_blanks() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t')) ++p_;
  }

  void skip_to_next_line() {
    const void* nl = std::memchr(p_, '\n', static_cast<size_t>(end_ - p_));
    p_ = nl ? static_cast<const char*>(nl) + 1 : end_;
  }

  bool at_field_end() const { return p_ == end_ || *p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r' || *p_ == '#'; }

  // Count the fields of the first entry to learn the order.
  int count_fields() const {
    int fields = 0;
    const char* q = p_;
    while (q < end_ && *q != '\n' && *q != '#') {
      while (q < end_ && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
      if (q == end_ || *q == '\n' || *q == '#') break;
      ++fields;
      while (q < end_ && *q != ' ' && *q != '\t' && *q != '\r' && *q != '\n' && *q != '#') ++q;
    }
    return fields;
  }

  int64_t parse_index(int mode) {
    if (p_ == end_ || *p_ < '0' || *p_ > '9') {
      if (p_ < end_ && *p_ == '-') fail("negative index in mode " + std::to_string(mode));
      fail("expected an integer index in mode " + std::to_string(mode));
    }
    int64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      if (v > (INT64_MAX - 9) / 10) fail("index too large in mode " + std::to_string(mode));
      v = v * 10 + (*p_++ - '0');
    }
    if (!at_field_end()) fail("expected an integer index in mode " + std::to_string(mode));
    return v;
  }

  double parse_value() {
    const char* start = p_;
    if (p_ < end_ && *p_ == '+') ++p_;  // from_chars takes no leading '+'
    double v = 0;
    auto [next, ec] = std::from_chars(p_, end_, v);
    if (ec != std::errc() || (p_ = next, !at_field_end())) {
      p_ = start;
      fail("expected a number as the value");
    }
    if (!std::isfinite(v)) fail("the value is not finite");
    return v;
  }

  void parse_entry(SparseTensor& t) {
    if (order_ == 0) {
      order_ = count_fields() - 1;
      if (order_ < 1) fail("an entry needs at least one index and a value");
      max_index_.assign(static_cast<size_t>(order_), -1);
      max_index_line_.assign(static_cast<size_t>(order_), 0);
      t.indices.reserve(t.values.capacity() * static_cast<size_t>(order_));
    }
    for (int k = 0; k < order_; ++k) {
      skip_blanks();
      if (p_ == end_ || *p_ == '\n' || *p_ == '\r' || *p_ == '#')
        fail("expected " + std::to_string(order_ + 1) + " fields, got " + std::to_string(k));
      const int64_t v = parse_index(k);
      saw_zero_ = saw_zero_ || v == 0;
      if (v > max_index_[k]) max_index_[k] = v, max_index_line_[k] = line_;
      t.indices.push_back(v);
    }
    skip_blanks();
    if (p_ == end_ || *p_ == '\n' || *p_ == '\r' || *p_ == '#')
      fail("expected " + std::to_string(order_ + 1) + " fields, got " + std::to_string(order_));
    t.values.push_back(parse_value());
    skip_blanks();
    while (p_ < end_ && *p_ == '\r') ++p_;
    if (p_ < end_ && *p_ != '\n' && *p_ != '#') fail("expected " + std::to_string(order_ + 1) + " fields, got more");
  }

  const char* p_;
  const char* begin_;
  const char* end_;
  const char* file_;
  std::string name_;
  int64_t line_ = 0;
  int order_ = 0;
  bool saw_zero_ = false;
  std::vector<int64_t> max_index_, max_index_line_;
};

SparseTensor parse_tns(const char* begin, const char* end, const std::string& name, const TnsReadOptions& options) {
  SparseTensor t;
  // A typical line is about 25 bytes; reserve to avoid most regrowth.
  const size_t guess = static_cast<size_t>(end - begin) / 24 + 1;
  t.values.reserve(guess);
  TnsParser parser(begin, end, name);
  parser.parse(t);
  if (parser.order() == 0) {
    if (options.shape.empty()) throw invalid_input("the .tns file has no entries (and no shape was given)", name);
    t.shape = options.shape;
    return t;
  }
  const int order = parser.order();
  if (!options.shape.empty() && static_cast<int>(options.shape.size()) != order)
    throw invalid_input("the entries have " + std::to_string(order) + " indices but the declared shape has " +
                            std::to_string(options.shape.size()) + " modes",
                        name);
  // Any index 0 means the file is 0-based; otherwise it is FROSTT's 1-based.
  const int64_t base = parser.saw_zero() ? 0 : 1;
  t.shape.resize(static_cast<size_t>(order));
  for (int k = 0; k < order; ++k) {
    const int64_t extent = parser.max_index()[k] - base + 1;
    if (!options.shape.empty() && extent > options.shape[k])
      throw invalid_input("index " + std::to_string(parser.max_index()[k]) + " in mode " + std::to_string(k) +
                              " lies beyond the declared extent " + std::to_string(options.shape[k]) +
                              (base ? " (1-based)" : " (0-based)"),
                          name + ": line " + std::to_string(parser.max_index_line()[k]));
    t.shape[k] = options.shape.empty() ? extent : options.shape[k];
  }
  if (base)
    for (int64_t& i : t.indices) --i;
  return t;
}

}  // namespace

bool looks_like_tns(const uint8_t* data, size_t size) {
  if (is_gzip(data, size)) return true;
  // The first entry (after comments and blank lines): integers then a number.
  size_t i = 0;
  while (i < size) {
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
    if (i < size && data[i] == '#') {
      while (i < size && data[i] != '\n') ++i;
      continue;
    }
    break;
  }
  if (i == size) return false;
  int fields = 0;
  bool last_integer = true;
  while (i < size && data[i] != '\n') {
    while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r')) ++i;
    if (i == size || data[i] == '\n' || data[i] == '#') break;
    if (!last_integer) return false;  // a non-integer field before the last
    const size_t start = i;
    bool integer = true;
    while (i < size && data[i] != ' ' && data[i] != '\t' && data[i] != '\r' && data[i] != '\n') {
      const uint8_t c = data[i++];
      if (c < '0' || c > '9') integer = false;
      if (!(std::isdigit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) return false;
    }
    if (i == start) return false;
    last_integer = integer;
    ++fields;
  }
  return fields >= 2;
}

bool stream_holds_tns(InputStream& in) {
  // Enough for a comment block and the first entry; the dense signatures need 64.
  const std::span<const uint8_t> head = in.peek(4096);
  if (is_gzip(head.data(), head.size())) return true;
  return detect_format(in) == FileFormat::kUnknown && looks_like_tns(head.data(), head.size());
}

SparseTensor read_tns(const std::string& path, const TnsReadOptions& options) {
  std::unique_ptr<InputStream> in = InputStream::open(path);
  return read_tns(*in, options);
}

SparseTensor read_tns(InputStream& in, const TnsReadOptions& options) {
  const std::string name = in.name();
  // Mapping keeps a large regular file out of the heap and reads it at page-cache speed.
  Buffer raw = in.is_regular_file() && in.position() == 0 ? Buffer::map_file(in.path()) : in.read_all();
  const uint8_t* data = raw.data();
  if (is_gzip(data, raw.size())) {
    const std::vector<char> text = inflate_gzip(data, raw.size(), name);
    return parse_tns(text.data(), text.data() + text.size(), name, options);
  }
  const char* text = reinterpret_cast<const char*>(data);
  return parse_tns(text, text + raw.size(), name, options);
}

TnsPart read_tns_part(const std::string& path, int part, int parts) {
  if (parts < 1 || part < 0 || part >= parts) throw internal_error("read_tns_part: no part " + std::to_string(part));
  std::unique_ptr<InputStream> in = InputStream::open(path);
  const std::string name = in->name();
  if (!in->is_regular_file()) throw usage_error("a .tns read in parts must be a file every reader can open", name);
  // A mapping: only the pages of this part (and of the line that straddles its end) are read.
  Buffer raw = Buffer::map_file(in->path());
  std::vector<char> inflated;
  const char* text = reinterpret_cast<const char*>(raw.data());
  size_t size = raw.size();
  if (is_gzip(raw.data(), raw.size())) {  // no seeking in gzip: every part inflates it all
    inflated = inflate_gzip(raw.data(), raw.size(), name);
    text = inflated.data();
    size = inflated.size();
  }
  // A line belongs to the part its first byte lies in.
  auto line_start = [&](size_t at) -> size_t {
    if (at == 0 || at >= size) return std::min(at, size);
    if (text[at - 1] == '\n') return at;
    const void* nl = std::memchr(text + at, '\n', size - at);
    return nl ? static_cast<size_t>(static_cast<const char*>(nl) - text) + 1 : size;
  };
  // floor(size * k / parts), without overflow.
  const size_t n = static_cast<size_t>(parts);
  auto cut = [&](size_t k) { return size / n * k + size % n * k / n; };
  const size_t begin = line_start(cut(static_cast<size_t>(part)));
  const size_t end = line_start(cut(static_cast<size_t>(part) + 1));
  TnsPart out;
  out.tensor.values.reserve((end - std::min(begin, end)) / 24 + 1);
  TnsParser parser(text + begin, text + std::max(begin, end), name, text);
  parser.parse(out.tensor);
  out.order = parser.order();
  out.max_index = parser.max_index();
  out.saw_zero = parser.saw_zero();
  return out;
}

void write_tns(const std::string& path, const SparseTensor& tensor) {
  const int order = tensor.order();
  if (tensor.indices.size() != static_cast<size_t>(tensor.nnz()) * static_cast<size_t>(order))
    throw internal_error("write_tns: the index array does not match the number of values");
  std::unique_ptr<OutputStream> out = OutputStream::open(path);
  std::vector<char> buf;
  buf.reserve(1 << 20);
  char field[64];
  for (int64_t e = 0; e < tensor.nnz(); ++e) {
    for (int k = 0; k < order; ++k) {
      auto res = std::to_chars(field, field + sizeof field, tensor.indices[e * order + k] + 1);
      buf.insert(buf.end(), field, res.ptr);
      buf.push_back(' ');
    }
    // Shortest representation that reads back to the same double.
    auto res = std::to_chars(field, field + sizeof field, tensor.values[e]);
    buf.insert(buf.end(), field, res.ptr);
    buf.push_back('\n');
    if (buf.size() > (1 << 20) - 256) {
      out->write(buf.data(), buf.size());
      buf.clear();
    }
  }
  out->write(buf.data(), buf.size());
  out->commit();
}

}  // namespace tk::io
