// Reading a .tkz container: restore the whole file, extract one tensor, list records.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "tk/codec/container.h"
#include "tk/codec/container_format.h"
#include "tk/codec/lossy.h"
#include "tk/core/error.h"
#include "tk/io/safetensors.h"

namespace tk::codec {
namespace {

using namespace tkz;

// Largest payload a record of `decoded` bytes may have: frames add a small table per
// chunk; anything beyond this bound is corruption, refused before allocating.
constexpr uint64_t kMaxOpaqueRecord = uint64_t{1} << 30;

uint64_t max_payload(uint64_t decoded) { return decoded > (UINT64_MAX >> 2) ? UINT64_MAX : 2 * decoded + (1 << 20); }

std::string short_hex(const Sha256Digest& d) { return sha256_hex(d).substr(0, 16); }

// The container's header and what it implies: the original safetensors header parsed
// (tensors in data order, which is their record id), and the base checked.
struct Container {
  FileHeader header;
  io::SafetensorsHeader st;
  uint64_t data_begin = 0;  // offset of the first data byte in the original file

  void open(io::InputStream& in, const BitxBase* base, bool need_base) {
    header = read_file_header(in);
    if (header.source == Source::kSafetensors) {
      const uint64_t json_len = load_le<uint64_t>(header.original_header.data());
      if (json_len != header.original_header.size() - 8) throw invalid_input("corrupt container header", in.name());
      try {
        st = io::safetensors_parse_header({header.original_header.data() + 8, json_len});
      } catch (const Error& e) {
        throw e.with_context(in.name());
      }
      data_begin = header.original_header.size();
    }
    if ((header.flags & kFlagBase) && need_base) {
      if (base == nullptr)
        throw invalid_input(fmt::format("container is a BitX delta against a base (SHA-256 {}...); give it with --base",
                                        short_hex(header.base_sha256)),
                            in.name());
      if (base->sha256() != header.base_sha256)
        throw invalid_input(fmt::format("{} is not the base this container was made against (SHA-256 {}..., "
                                        "expected {}...)",
                                        base->name(), short_hex(base->sha256()), short_hex(header.base_sha256)),
                            in.name());
    }
  }

  bool has_base() const { return (header.flags & kFlagBase) != 0; }

  // Where errors in a record are reported: the tensor it holds (or, when its header is
  // unreadable, the tensor expected there).
  std::string where(const io::InputStream& in, std::optional<size_t> tensor) const {
    if (tensor && *tensor < st.tensors.size()) return in.name() + ": tensor '" + st.tensors[*tensor].name + "'";
    return in.name();
  }

  // Check a record header against the original header; returns the tensor info for
  // tensor records.
  const io::TensorInfo* check_record(const RecordHeader& r) const {
    if (r.kind == Kind::kTensor) {
      if (r.id >= st.tensors.size()) throw invalid_input("record names a tensor the header does not have");
      const io::TensorInfo& info = st.tensors[r.id];
      if (r.decoded != info.nbytes) throw invalid_input("record size does not match the tensor");
      if (r.codec == TkzCodec::kZstd) throw invalid_input("tensor record with an opaque codec");
      if ((r.codec == TkzCodec::kBitxRef || r.codec == TkzCodec::kBitxDelta) && !has_base())
        throw invalid_input("BitX record in a container made without a base");
      if (r.codec == TkzCodec::kBitxRef && r.stored != 0) throw invalid_input("BitX reference with a payload");
      return &info;
    }
    if (r.codec != TkzCodec::kZstd) throw invalid_input("opaque record with a tensor codec");
    return nullptr;
  }
};

// Decode one record's payload into `out` (r.decoded bytes) and check its checksum.
void decode_payload(const RecordHeader& r, const io::TensorInfo* info, std::span<const uint8_t> payload,
                    std::span<uint8_t> out, const TkzDecodeOptions& options) {
  const BitxBase::Tensor* base = nullptr;
  if (r.codec == TkzCodec::kBitxRef || r.codec == TkzCodec::kBitxDelta) {
    if (options.base == nullptr) throw invalid_input("BitX record needs the base (--base)");
    base = options.base->match(*info);
    if (base == nullptr) throw invalid_input("the base has no tensor of this name, dtype and shape");
    if (bitx_tensor_hash(base->bytes) != r.base_hash)
      throw invalid_input("the base's tensor differs from the one this record was made against");
  }
  switch (r.codec) {
    case TkzCodec::kLossless:
    case TkzCodec::kZstd:
      if (lossless_decoded_size(payload) != r.decoded) throw invalid_input("frame size does not match the record");
      lossless_decompress(payload, out, options.threads);
      break;
    case TkzCodec::kBitxRef:
      if (!out.empty()) std::memcpy(out.data(), base->bytes.data(), out.size());
      break;
    case TkzCodec::kBitxDelta:
      bitx_decode(payload, base->bytes, out, options.threads);
      break;
    case TkzCodec::kLossy: {
      // The checksum covers the frame: the decoded values are an approximation that only
      // the decoder defines.
      if (hash(payload) != r.hash) throw invalid_input("checksum mismatch");
      Tensor t = lossy_decode(payload);
      if (t.dtype() != info->dtype || t.shape() != info->shape || t.nbytes() != out.size())
        throw invalid_input("lossy frame does not match the tensor's dtype and shape");
      if (!out.empty()) std::memcpy(out.data(), t.data(), out.size());
      return;
    }
  }
  if (hash({out.data(), out.size()}) != r.hash) throw invalid_input("checksum mismatch");
}

RecordHeader read_record_header(io::InputStream& in) {
  uint8_t head[kRecordHeaderBytes];
  in.read_exact(head, kRecordHeaderBytes, "record header");
  return parse_record_header(head);
}

Buffer read_payload(io::InputStream& in, const RecordHeader& r) {
  if (r.stored > max_payload(r.decoded)) throw invalid_input("record payload too large");
  if (in.size() && r.stored > *in.size() - in.position()) throw invalid_input("truncated record");
  Buffer payload = Buffer::allocate(r.stored);
  in.read_exact(payload.mutable_data(), r.stored, "record");
  return payload;
}

// The index and footer that follow the end record on a sequential read: `count` index
// entries (each read as its length field says, so nothing is allocated in advance),
// then the footer, then the end of the stream.
std::vector<IndexEntry> read_index_sequential(io::InputStream& in, uint64_t count, Footer* footer_out) {
  std::vector<uint8_t> index;
  constexpr size_t kFixed = 1 + 1 + 4 + 3 * 8;
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t len_bytes[4];
    in.read_exact(len_bytes, 4, "container index");
    const uint32_t name_len = load_le<uint32_t>(len_bytes);
    if (name_len > io::kSafetensorsMaxHeader) throw invalid_input("corrupt container index", in.name());
    const size_t at = index.size();
    index.resize(at + 4 + name_len + kFixed);
    std::memcpy(index.data() + at, len_bytes, 4);
    in.read_exact(index.data() + at + 4, name_len + kFixed, "container index");
  }
  uint8_t footer_bytes[kFooterBytes];
  in.read_exact(footer_bytes, kFooterBytes, "container footer");
  Footer footer = parse_footer({footer_bytes, kFooterBytes});
  if (footer.index_entries != count || footer.index_bytes != index.size())
    throw invalid_input("container footer does not match its records", in.name());
  std::vector<IndexEntry> entries = parse_index(index, {footer_bytes, kFooterBytes}, footer);
  if (!in.peek(1).empty()) throw invalid_input("trailing bytes after the container footer", in.name());
  *footer_out = footer;
  return entries;
}

bool same_entry(const IndexEntry& a, const IndexEntry& b) {
  return a.name == b.name && a.kind == b.kind && a.codec == b.codec && a.id == b.id && a.offset == b.offset &&
         a.decoded == b.decoded && a.stored == b.stored;
}

// The index and footer of a seekable container, read from the end of its mapping.
struct RandomAccess {
  Buffer file;
  Footer footer;
  std::vector<IndexEntry> index;
};

RandomAccess open_random_access(io::InputStream& in) {
  RandomAccess ra;
  ra.file = Buffer::map_file(in.path());
  const uint64_t size = ra.file.size();
  if (size < kFooterBytes) throw invalid_input("truncated container (no footer)", in.name());
  std::span<const uint8_t> footer_bytes(ra.file.data() + size - kFooterBytes, kFooterBytes);
  try {
    ra.footer = parse_footer(footer_bytes);
    if (ra.footer.index_offset > size - kFooterBytes ||
        ra.footer.index_bytes != size - kFooterBytes - ra.footer.index_offset)
      throw invalid_input("corrupt container footer");
    ra.index = parse_index({ra.file.data() + ra.footer.index_offset, ra.footer.index_bytes}, footer_bytes, ra.footer);
  } catch (const Error& e) {
    throw Error(e.kind(), e.what(), in.name());
  }
  return ra;
}

std::string entry_name(const IndexEntry& e, const Container& c) {
  return e.kind == Kind::kTensor && e.id < c.st.tensors.size() ? c.st.tensors[e.id].name : std::string();
}

}  // namespace

TkzDecompressResult tkz_decompress(io::InputStream& in, io::OutputStream& out, const TkzDecodeOptions& options) {
  Container c;
  c.open(in, options.base, true);
  TkzDecompressResult result;
  BackgroundSha256 sha;
  const uint64_t in_begin = in.position() - kFileHeaderBytes - c.header.original_header.size() - 8;
  const uint64_t out_begin = out.position();
  auto emit = [&](const Buffer& bytes) {
    out.write(bytes.data(), bytes.size());
    sha.update(bytes);
  };
  {
    Buffer header = Buffer::allocate(c.header.original_header.size());
    if (!header.empty()) std::memcpy(header.mutable_data(), c.header.original_header.data(), header.size());
    emit(header);
  }
  uint64_t position = c.header.original_header.size();  // in the original file
  size_t next_tensor = 0;
  std::vector<IndexEntry> seen;
  RecordHeader end;
  for (;;) {
    const uint64_t offset = in.position() - in_begin;
    std::optional<size_t> expected;
    if (next_tensor < c.st.tensors.size()) expected = next_tensor;
    try {
      RecordHeader r = read_record_header(in);
      if (r.kind == Kind::kEnd) {
        end = r;
        break;
      }
      const io::TensorInfo* info = c.check_record(r);
      if (info != nullptr) {
        expected = r.id;
        if (r.id != next_tensor || c.data_begin + c.st.offsets[r.id] != position)
          throw invalid_input("record out of order");
        ++next_tensor;
      } else {
        expected.reset();
        if (next_tensor < c.st.tensors.size() && r.decoded > c.data_begin + c.st.offsets[next_tensor] - position)
          throw invalid_input("opaque record overlaps a tensor");
        if (r.decoded > kMaxOpaqueRecord) throw invalid_input("opaque record too large");
      }
      Buffer payload = read_payload(in, r);
      Buffer decoded = Buffer::allocate(r.decoded);
      std::span<uint8_t> out_span(decoded.mutable_data(), decoded.size());
      decode_payload(r, info, {payload.data(), payload.size()}, out_span, options);
      if (r.codec == TkzCodec::kLossy) result.exact = false;
      emit(decoded);
      position += r.decoded;
      seen.push_back({info ? info->name : std::string(), r.kind, r.codec, r.id, offset, r.decoded, r.stored});
    } catch (const Error& e) {
      throw Error(e.kind(), e.what(), c.where(in, expected));
    }
  }
  if (next_tensor != c.st.tensors.size())
    throw invalid_input("container ends before tensor '" + c.st.tensors[next_tensor].name + "'", in.name());
  if (end.id != seen.size() || end.decoded != position)
    throw invalid_input("end record does not match the records", in.name());
  Footer footer;
  std::vector<IndexEntry> index = read_index_sequential(in, seen.size(), &footer);
  for (size_t i = 0; i < seen.size(); ++i)
    if (!same_entry(index[i], seen[i])) throw invalid_input("container index does not match its records", in.name());
  if (footer.original_bytes != position) throw invalid_input("container footer does not match its records", in.name());
  result.sha256 = sha.finish();
  if (result.exact && result.sha256 != footer.sha256)
    throw invalid_input("SHA-256 of the restored file differs from the original's", in.name());
  result.bytes_in = in.position() - in_begin;
  result.bytes_out = out.position() - out_begin;
  return result;
}

Tensor tkz_extract(io::InputStream& in, std::string_view name, const TkzDecodeOptions& options,
                   io::TensorInfo* info_out) {
  const bool seekable = in.is_regular_file() && in.position() == 0;
  Container c;
  c.open(in, options.base, false);
  if (c.header.source != Source::kSafetensors)
    throw usage_error(fmt::format("container holds a {} file as opaque bytes, not tensors; restore it with -d",
                                  io::format_name(format_of(c.header.source))),
                      in.name());
  auto it = std::find_if(c.st.tensors.begin(), c.st.tensors.end(), [&](const auto& t) { return t.name == name; });
  if (it == c.st.tensors.end()) throw usage_error("no tensor named '" + std::string(name) + "'", in.name());
  const size_t id = static_cast<size_t>(it - c.st.tensors.begin());
  const io::TensorInfo& info = *it;

  // Locate the record: through the index on a file, by skipping records on a pipe.
  RecordHeader r;
  Buffer payload;
  try {
    if (seekable) {
      RandomAccess ra = open_random_access(in);
      auto e = std::find_if(ra.index.begin(), ra.index.end(),
                            [&](const IndexEntry& x) { return x.kind == Kind::kTensor && x.id == id; });
      if (e == ra.index.end()) throw invalid_input("container index lacks the tensor");
      if (e->offset > ra.footer.index_offset || ra.footer.index_offset - e->offset < kRecordHeaderBytes)
        throw invalid_input("corrupt container index");
      r = parse_record_header(ra.file.data() + e->offset);
      if (r.kind != Kind::kTensor || r.id != id || r.codec != e->codec || r.stored != e->stored ||
          r.stored > ra.footer.index_offset - e->offset - kRecordHeaderBytes)
        throw invalid_input("container index does not match the record");
      payload = ra.file.slice(e->offset + kRecordHeaderBytes, r.stored);
    } else {
      for (;;) {
        r = read_record_header(in);
        if (r.kind == Kind::kEnd) throw invalid_input("container has no record for the tensor");
        c.check_record(r);
        if (r.kind == Kind::kTensor && r.id == id) {
          payload = read_payload(in, r);
          break;
        }
        in.skip(r.stored, "record");
      }
    }
    c.check_record(r);
    if (c.has_base() && (r.codec == TkzCodec::kBitxRef || r.codec == TkzCodec::kBitxDelta)) {
      // The base is checked only when this tensor needs it.
      if (options.base == nullptr)
        throw invalid_input(fmt::format("tensor is a BitX delta against a base (SHA-256 {}...); give it with --base",
                                        short_hex(c.header.base_sha256)));
      if (options.base->sha256() != c.header.base_sha256)
        throw invalid_input(options.base->name() + " is not the base this container was made against");
    }
    Tensor tensor = Tensor::empty(info.dtype, info.shape);
    decode_payload(r, &info, {payload.data(), payload.size()}, {tensor.mutable_data(), tensor.nbytes()}, options);
    if (info_out) *info_out = info;
    return tensor;
  } catch (const Error& e) {
    throw Error(e.kind(), e.what(), in.name() + ": tensor '" + info.name + "'");
  }
}

TkzListing tkz_list(io::InputStream& in) {
  const bool seekable = in.is_regular_file() && in.position() == 0;
  const uint64_t in_begin = in.position();
  Container c;
  c.open(in, nullptr, false);
  TkzListing listing;
  listing.source = format_of(c.header.source);
  listing.has_base = c.has_base();
  listing.base_sha256 = c.header.base_sha256;
  std::vector<IndexEntry> index;
  Footer footer;
  if (seekable) {
    RandomAccess ra = open_random_access(in);
    index = std::move(ra.index);
    footer = ra.footer;
    listing.container_bytes = ra.file.size();
  } else {
    std::vector<IndexEntry> seen;
    for (;;) {
      const uint64_t offset = in.position() - in_begin;
      RecordHeader r;
      try {
        r = read_record_header(in);
      } catch (const Error& e) {
        throw Error(e.kind(), e.what(), in.name());
      }
      if (r.kind == Kind::kEnd) break;
      const io::TensorInfo* info = c.check_record(r);
      in.skip(r.stored, "record");
      seen.push_back({info ? info->name : std::string(), r.kind, r.codec, r.id, offset, r.decoded, r.stored});
    }
    index = read_index_sequential(in, seen.size(), &footer);
    for (size_t i = 0; i < seen.size(); ++i)
      if (!same_entry(index[i], seen[i])) throw invalid_input("container index does not match its records", in.name());
    listing.container_bytes = in.position() - in_begin;
  }
  listing.sha256 = footer.sha256;
  listing.original_bytes = footer.original_bytes;
  for (const IndexEntry& e : index) {
    TkzEntry t;
    t.is_tensor = e.kind == Kind::kTensor;
    t.name = entry_name(e, c);
    if (t.is_tensor) {
      if (e.id >= c.st.tensors.size()) throw invalid_input("corrupt container index", in.name());
      t.dtype = c.st.tensors[e.id].dtype;
      t.shape = c.st.tensors[e.id].shape;
    }
    t.codec = e.codec;
    t.offset = e.offset;
    t.bytes = e.decoded;
    t.stored = e.stored;
    listing.entries.push_back(std::move(t));
  }
  return listing;
}

}  // namespace tk::codec
