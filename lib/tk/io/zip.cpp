#include "tk/io/zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/stream.h"
#include "tk/io/temp_file.h"

namespace tk::io {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalBytes = 30, kCentralBytes = 46, kEndBytes = 22;
constexpr size_t kZip64EndBytes = 56, kZip64LocatorBytes = 20;
constexpr uint32_t k32 = 0xFFFFFFFF;
constexpr uint16_t k16 = 0xFFFF;
// Deflate cannot expand data by more than about 1032:1; a larger claim is a bomb.
constexpr uint64_t kMaxInflateRatio = 1032;

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t le32(const uint8_t* p) { return le16(p) | static_cast<uint32_t>(le16(p + 2)) << 16; }
uint64_t le64(const uint8_t* p) { return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32; }

Error malformed(const std::string& what, const std::string& where) {
  return invalid_input("malformed zip archive: " + what, where);
}

uint32_t crc_of(const uint8_t* data, uint64_t n, uint32_t crc = 0) {
  if (crc == 0) crc = static_cast<uint32_t>(::crc32_z(0, nullptr, 0));
  return static_cast<uint32_t>(::crc32_z(crc, data, static_cast<z_size_t>(n)));
}

// Inflate the raw deflate stream `in` into `out`: all of it when `whole`, else as much as
// `out` holds. Returns the bytes produced.
size_t inflate_into(std::span<const uint8_t> in, std::span<uint8_t> out, bool whole, const std::string& where) {
  z_stream z{};
  if (::inflateInit2(&z, -MAX_WBITS) != Z_OK) throw unavailable("cannot start zlib's inflate", where);
  size_t produced = 0;
  int rc = Z_OK;
  const uint8_t* next_in = in.data();
  uint64_t left_in = in.size();
  while (produced < out.size() || whole) {
    const uInt chunk_in = static_cast<uInt>(std::min<uint64_t>(left_in, 1u << 30));
    const uInt chunk_out = static_cast<uInt>(std::min<uint64_t>(out.size() - produced, 1u << 30));
    z.next_in = const_cast<Bytef*>(next_in);
    z.avail_in = chunk_in;
    z.next_out = out.data() + produced;
    z.avail_out = chunk_out;
    rc = ::inflate(&z, Z_NO_FLUSH);
    next_in += chunk_in - z.avail_in;
    left_in -= chunk_in - z.avail_in;
    produced += chunk_out - z.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && chunk_out == 0) break;  // output full: more data than declared
    if (rc != Z_OK) break;
  }
  ::inflateEnd(&z);
  if (!whole) {
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) throw malformed("corrupt deflate data", where);
    return produced;
  }
  if (rc != Z_STREAM_END) {
    if (rc == Z_OK || rc == Z_BUF_ERROR)
      throw malformed(produced < out.size() ? "deflate data ends early" : "deflate data longer than declared",
                      where);
    throw malformed("corrupt deflate data", where);
  }
  if (produced != out.size()) throw malformed("deflate data shorter than declared", where);
  return produced;
}

struct Writer64 {
  std::vector<uint8_t> bytes;
  void u16(uint64_t v) { for (int i = 0; i < 2; ++i) bytes.push_back(static_cast<uint8_t>(v >> 8 * i)); }
  void u32(uint64_t v) { for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> 8 * i)); }
  void u64(uint64_t v) { for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(v >> 8 * i)); }
  void text(std::string_view s) { bytes.insert(bytes.end(), s.begin(), s.end()); }
};

bool ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// DOS date of 1980-01-01, time 00:00: archives do not record when they were written.
constexpr uint16_t kDosDate = (1 << 5) | 1, kDosTime = 0;
constexpr uint16_t kFlagUtf8 = 1 << 11;
constexpr uint16_t kPadExtraId = 0x746b;  // "tk": padding, ignored by readers

}  // namespace

ZipArchive::ZipArchive(Buffer file, std::string name) : file_(std::move(file)), name_(std::move(name)) {
  parse();
  checked_ = std::make_unique<std::atomic<bool>[]>(entries_.size());
}

void ZipArchive::parse() {
  const uint8_t* base = file_.data();
  const uint64_t size = file_.size();
  if (size < kEndBytes) throw malformed("shorter than its end record", name_);
  // The end record is the last 22 bytes plus a comment of at most 64 KiB; the first
  // candidate from the end whose comment reaches exactly to the end of the file.
  std::optional<uint64_t> end;
  const uint64_t lowest = size - std::min<uint64_t>(size, kEndBytes + 0xFFFF);
  for (uint64_t at = size - kEndBytes + 1; at-- > lowest;) {
    if (le32(base + at) == kEndSig && at + kEndBytes + le16(base + at + 20) == size) {
      end = at;
      break;
    }
  }
  if (!end) throw malformed("no end of central directory record", name_);
  const uint8_t* e = base + *end;
  uint64_t count = le16(e + 10), cd_bytes = le32(e + 12), cd_offset = le32(e + 16);
  uint64_t cd_end_limit = *end;  // where the central directory must end by
  if (le16(e + 4) != 0 || le16(e + 6) != 0 || le16(e + 8) != le16(e + 10))
    throw invalid_input("unsupported zip archive: it spans several disks", name_);
  if (count == k16 || cd_bytes == k32 || cd_offset == k32) {
    if (*end < kZip64LocatorBytes || le32(e - kZip64LocatorBytes) != kZip64LocatorSig)
      throw malformed("zip64 values without a zip64 locator", name_);
    const uint8_t* loc = e - kZip64LocatorBytes;
    const uint64_t z64 = le64(loc + 8);
    if (le32(loc + 4) != 0 || le32(loc + 16) > 1)
      throw invalid_input("unsupported zip archive: it spans several disks", name_);
    if (z64 > *end - kZip64LocatorBytes || *end - kZip64LocatorBytes - z64 < kZip64EndBytes ||
        le32(base + z64) != kZip64EndSig)
      throw malformed("zip64 end record out of place", name_);
    const uint8_t* r = base + z64;
    if (le32(r + 16) != 0 || le32(r + 20) != 0 || le64(r + 24) != le64(r + 32))
      throw invalid_input("unsupported zip archive: it spans several disks", name_);
    count = le64(r + 32);
    cd_bytes = le64(r + 40);
    cd_offset = le64(r + 48);
    cd_end_limit = z64;
  }
  if (cd_offset > cd_end_limit || cd_bytes > cd_end_limit - cd_offset)
    throw malformed("central directory outside the file", name_);
  if (count > cd_bytes / kCentralBytes) throw malformed("more entries than the central directory holds", name_);
  entries_.reserve(static_cast<size_t>(count));
  by_name_.reserve(static_cast<size_t>(count));
  const uint8_t* p = base + cd_offset;
  const uint8_t* cd_end = p + cd_bytes;
  for (uint64_t i = 0; i < count; ++i) {
    if (static_cast<uint64_t>(cd_end - p) < kCentralBytes || le32(p) != kCentralSig)
      throw malformed("central directory entry " + std::to_string(i) + " is damaged", name_);
    const uint16_t flags = le16(p + 8), method = le16(p + 10);
    const size_t name_len = le16(p + 28), extra_len = le16(p + 30), comment_len = le16(p + 32);
    if (static_cast<uint64_t>(cd_end - p) < kCentralBytes + name_len + extra_len + comment_len)
      throw malformed("central directory entry " + std::to_string(i) + " runs past the directory", name_);
    ZipEntry entry;
    entry.name.assign(reinterpret_cast<const char*>(p + kCentralBytes), name_len);
    const std::string where = name_ + ": entry '" + entry.name + "'";
    if (flags & 1) throw invalid_input("unsupported zip archive: the entry is encrypted", where);
    if (method != 0 && method != 8)
      throw invalid_input("unsupported zip archive: compression method " + std::to_string(method) +
                              " (only stored and deflate are read)",
                          where);
    entry.deflated = method == 8;
    entry.crc32 = le32(p + 16);
    entry.stored_bytes = le32(p + 20);
    entry.bytes = le32(p + 24);
    uint64_t local = le32(p + 42);
    uint32_t disk = le16(p + 34);
    // The zip64 extra field holds, in this order, the values whose 32-bit fields are full.
    const uint8_t* x = p + kCentralBytes + name_len;
    const uint8_t* x_end = x + extra_len;
    while (x_end - x >= 4) {
      const uint16_t id = le16(x), len = le16(x + 2);
      if (x_end - x - 4 < len) throw malformed("extra field runs past its entry", where);
      if (id == 1) {
        const uint8_t* v = x + 4;
        size_t left = len;
        auto take = [&](uint64_t& field) {
          if (left < 8) throw malformed("zip64 extra field too short", where);
          field = le64(v);
          v += 8;
          left -= 8;
        };
        if (entry.bytes == k32) take(entry.bytes);
        if (entry.stored_bytes == k32) take(entry.stored_bytes);
        if (local == k32) take(local);
        if (disk == k16) {
          if (left < 4) throw malformed("zip64 extra field too short", where);
          disk = le32(v);
        }
      }
      x += 4 + len;
    }
    if (disk != 0) throw invalid_input("unsupported zip archive: it spans several disks", where);
    if (!entry.deflated && entry.stored_bytes != entry.bytes)
      throw malformed("stored entry whose sizes differ", where);
    if (entry.deflated && entry.bytes > entry.stored_bytes * kMaxInflateRatio + 64)
      throw malformed("declared size " + std::to_string(entry.bytes) + " is more than deflate can expand " +
                          std::to_string(entry.stored_bytes) + " bytes to",
                      where);
    if (local > cd_offset || cd_offset - local < kLocalBytes || le32(base + local) != kLocalSig)
      throw malformed("local header out of place", where);
    const uint8_t* lh = base + local;
    if (le16(lh + 8) != method) throw malformed("local header names another compression method", where);
    entry.header_offset = local;
    entry.data_offset = local + kLocalBytes + le16(lh + 26) + le16(lh + 28);
    if (entry.data_offset > cd_offset || entry.stored_bytes > cd_offset - entry.data_offset)
      throw malformed("entry data runs past the start of the central directory", where);
    if (le16(lh + 26) != name_len || std::memcmp(lh + kLocalBytes, entry.name.data(), name_len) != 0)
      throw malformed("local header names another entry", where);
    p += kCentralBytes + name_len + extra_len + comment_len;
    entries_.push_back(std::move(entry));
    if (!by_name_.emplace(entries_.back().name, entries_.size() - 1).second) throw malformed("duplicate entry", where);
  }
  check_overlaps(cd_offset);
}

// Entries in the order of their local headers: each one's header and data must end
// where the next one's header begins, or before; the last before the central directory.
// Quoting one local header from several directory entries, or one entry's data from
// another's, would let a small file claim any amount of data.
void ZipArchive::check_overlaps(uint64_t cd_offset) const {
  std::vector<size_t> order(entries_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return entries_[a].header_offset < entries_[b].header_offset; });
  for (size_t k = 0; k < order.size(); ++k) {
    const ZipEntry& e = entries_[order[k]];
    const uint64_t end = e.data_offset + e.stored_bytes;  // both bounded by cd_offset
    const uint64_t next = k + 1 < order.size() ? entries_[order[k + 1]].header_offset : cd_offset;
    if (end > next)
      throw malformed(k + 1 < order.size() ? "overlapped entries (with '" + entries_[order[k + 1]].name + "')"
                                           : "overlapped entries (with the central directory)",
                      name_ + ": entry '" + e.name + "'");
  }
}

std::optional<size_t> ZipArchive::find(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

Buffer ZipArchive::read(size_t index) const {
  const ZipEntry& e = entries_.at(index);
  const std::string where = name_ + ": entry '" + e.name + "'";
  Buffer out;
  if (!e.deflated) {
    // Views of one storage read it again and again; the mapping does not change.
    out = file_.slice(e.data_offset, e.stored_bytes);
    if (checked_[index].load(std::memory_order_relaxed)) return out;
  } else {
    out = Buffer::allocate(e.bytes);
    inflate_into({file_.data() + e.data_offset, e.stored_bytes}, {out.mutable_data(), e.bytes}, true, where);
  }
  if (crc_of(out.data(), out.size()) != e.crc32) throw invalid_input("zip entry fails its CRC-32 check", where);
  if (!e.deflated) checked_[index].store(true, std::memory_order_relaxed);
  return out;
}

Buffer ZipArchive::read_prefix(size_t index, size_t n) const {
  const ZipEntry& e = entries_.at(index);
  n = static_cast<size_t>(std::min<uint64_t>(n, e.bytes));
  if (!e.deflated) return file_.slice(e.data_offset, n);
  Buffer out = Buffer::allocate(n);
  const size_t got = inflate_into({file_.data() + e.data_offset, e.stored_bytes}, {out.mutable_data(), n}, false,
                                  name_ + ": entry '" + e.name + "'");
  return out.slice(0, got);
}

void ZipArchive::read_pieces(size_t index, uint64_t skip, uint64_t n, size_t piece_bytes,
                             const std::function<void(std::span<const uint8_t>)>& sink) const {
  const ZipEntry& e = entries_.at(index);
  const std::string where = name_ + ": entry '" + e.name + "'";
  if (piece_bytes == 0 || skip > e.bytes || n > e.bytes - skip)
    throw internal_error("zip read_pieces out of the entry", where);
  if (!e.deflated) {
    Buffer whole = read(index);
    for (uint64_t at = 0; at < n; at += piece_bytes)
      sink({whole.data() + skip + at, static_cast<size_t>(std::min<uint64_t>(piece_bytes, n - at))});
    return;
  }
  z_stream z{};
  if (::inflateInit2(&z, -MAX_WBITS) != Z_OK) throw unavailable("cannot start zlib's inflate", where);
  std::vector<uint8_t> out(std::min<size_t>(piece_bytes, size_t{1} << 20));
  std::vector<uint8_t> piece;
  piece.reserve(static_cast<size_t>(std::min<uint64_t>(piece_bytes, n)));
  uint32_t crc = static_cast<uint32_t>(::crc32_z(0, nullptr, 0));
  uint64_t produced = 0;
  const uint8_t* next_in = file_.data() + e.data_offset;
  uint64_t left_in = e.stored_bytes;
  int rc = Z_OK;
  try {
    while (rc != Z_STREAM_END) {
      const uInt chunk_in = static_cast<uInt>(std::min<uint64_t>(left_in, 1u << 30));
      z.next_in = const_cast<Bytef*>(next_in);
      z.avail_in = chunk_in;
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      rc = ::inflate(&z, Z_NO_FLUSH);
      next_in += chunk_in - z.avail_in;
      left_in -= chunk_in - z.avail_in;
      const size_t got = out.size() - z.avail_out;
      if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && got > 0)) break;
      if (got > e.bytes - produced) throw malformed("deflate data longer than declared", where);
      crc = static_cast<uint32_t>(::crc32_z(crc, out.data(), got));
      // The part of this output inside [skip, skip + n), a piece at a time.
      const uint64_t lo = std::max(produced, skip), hi = std::min(produced + got, skip + n);
      for (uint64_t at = lo; at < hi;) {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(hi - at, piece_bytes - piece.size()));
        piece.insert(piece.end(), out.data() + (at - produced), out.data() + (at - produced) + take);
        at += take;
        if (piece.size() == piece_bytes) {
          sink(piece);
          piece.clear();
        }
      }
      produced += got;
      if (got == 0 && left_in == 0 && rc != Z_STREAM_END) break;
    }
  } catch (...) {
    ::inflateEnd(&z);
    throw;
  }
  ::inflateEnd(&z);
  if (rc != Z_STREAM_END)
    throw malformed(rc == Z_OK || rc == Z_BUF_ERROR ? "deflate data ends early" : "corrupt deflate data", where);
  if (produced != e.bytes) throw malformed("deflate data shorter than declared", where);
  if (!piece.empty()) sink(piece);
  if (crc != e.crc32) throw invalid_input("zip entry fails its CRC-32 check", where);
}

Buffer whole_input(InputStream& in, bool allow_mmap, TempFile& spool) {
  if (in.is_regular_file() && in.position() == 0 && allow_mmap) return Buffer::map_file(in.path());
  if (in.is_regular_file() || in.is_memory() || !spool.create("tk-zip")) return in.read_all();
  spool.remove_name();
  if (copy_to_temp(in, spool) == 0) return Buffer();
  return Buffer::map_fd(spool.fd(), in.name());
}

void ZipWriter::add(std::string_view name, std::span<const uint8_t> head, std::span<const uint8_t> body) {
  if (name.size() > k16) throw usage_error("zip entry name longer than 65535 bytes", std::string(name));
  const uint64_t bytes = head.size() + body.size();
  const uint32_t crc = crc_of(body.data(), body.size(), crc_of(head.data(), head.size()));
  const uint64_t offset = out_.position();
  const bool big = bytes >= k32;
  Writer64 h;
  h.u32(kLocalSig);
  h.u16(big ? 45 : 20);
  h.u16(ascii(name) ? 0 : kFlagUtf8);
  h.u16(0);  // stored
  h.u16(kDosTime);
  h.u16(kDosDate);
  h.u32(crc);
  h.u32(big ? k32 : bytes);
  h.u32(big ? k32 : bytes);
  const size_t fixed_extra = big ? 20 : 0;
  // Pad with an extra field so that the data starts at a multiple of 64.
  size_t pad = (64 - (offset + kLocalBytes + name.size() + fixed_extra) % 64) % 64;
  if (pad > 0 && pad < 4) pad += 64;
  h.u16(name.size());
  h.u16(fixed_extra + pad);
  h.text(name);
  if (big) {
    h.u16(1);
    h.u16(16);
    h.u64(bytes);
    h.u64(bytes);
  }
  if (pad > 0) {
    h.u16(kPadExtraId);
    h.u16(pad - 4);
    h.bytes.resize(h.bytes.size() + pad - 4, 0);
  }
  out_.write(h.bytes);
  out_.write(head);
  out_.write(body);
  written_.push_back({std::string(name), crc, bytes, offset});
}

void ZipWriter::finish() {
  const uint64_t cd_offset = out_.position();
  Writer64 cd;
  for (const Written& w : written_) {
    const bool big_size = w.bytes >= k32, big_offset = w.offset >= k32;
    cd.u32(kCentralSig);
    cd.u16(big_size || big_offset ? 45 : 20);  // made by: MS-DOS, the version needed
    cd.u16(big_size || big_offset ? 45 : 20);
    cd.u16(ascii(w.name) ? 0 : kFlagUtf8);
    cd.u16(0);
    cd.u16(kDosTime);
    cd.u16(kDosDate);
    cd.u32(w.crc32);
    cd.u32(big_size ? k32 : w.bytes);
    cd.u32(big_size ? k32 : w.bytes);
    cd.u16(w.name.size());
    cd.u16((big_size ? 16 : 0) + (big_offset ? 8 : 0) + (big_size || big_offset ? 4 : 0));
    cd.u16(0);  // comment
    cd.u16(0);  // disk
    cd.u16(0);  // internal attributes
    cd.u32(0);  // external attributes
    cd.u32(big_offset ? k32 : w.offset);
    cd.text(w.name);
    if (big_size || big_offset) {
      cd.u16(1);
      cd.u16((big_size ? 16 : 0) + (big_offset ? 8 : 0));
      if (big_size) {
        cd.u64(w.bytes);
        cd.u64(w.bytes);
      }
      if (big_offset) cd.u64(w.offset);
    }
  }
  const uint64_t cd_bytes = cd.bytes.size(), count = written_.size();
  if (count >= k16 || cd_bytes >= k32 || cd_offset >= k32) {
    const uint64_t z64 = cd_offset + cd_bytes;
    cd.u32(kZip64EndSig);
    cd.u64(kZip64EndBytes - 12);
    cd.u16(45);
    cd.u16(45);
    cd.u32(0);
    cd.u32(0);
    cd.u64(count);
    cd.u64(count);
    cd.u64(cd_bytes);
    cd.u64(cd_offset);
    cd.u32(kZip64LocatorSig);
    cd.u32(0);
    cd.u64(z64);
    cd.u32(1);
  }
  cd.u32(kEndSig);
  cd.u16(0);
  cd.u16(0);
  cd.u16(std::min<uint64_t>(count, k16));
  cd.u16(std::min<uint64_t>(count, k16));
  cd.u32(std::min<uint64_t>(cd_bytes, k32));
  cd.u32(std::min<uint64_t>(cd_offset, k32));
  cd.u16(0);
  out_.write(cd.bytes);
}

}  // namespace tk::io
