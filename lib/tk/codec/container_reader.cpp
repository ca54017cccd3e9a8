#include "tk/codec/container_reader.h"

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "tk/codec/lossy.h"
#include "tk/core/error.h"

namespace tk::codec::tkz {

namespace {

// Largest payload a record of `decoded` bytes may have: frames add a small table per
// chunk; anything beyond this bound is corruption, refused before allocating.
uint64_t max_payload(uint64_t decoded) { return decoded > (UINT64_MAX >> 2) ? UINT64_MAX : 2 * decoded + (1 << 20); }

// Bytes of a payload peeked to check what its frame claims: a lossless frame's header,
// which is longer than any zstd frame header (at most 18 bytes).
constexpr size_t kFrameHeadBytes = kLosslessHeaderBytes;
static_assert(kFrameHeadBytes >= 18);

// Bytes of the base or of a lossy tensor handed to the sink at a time.
constexpr size_t kPieceBytes = 16 << 20;

std::string short_hex(const Sha256Digest& d) { return sha256_hex(d).substr(0, 16); }

// Read `n` bytes of a payload from `in` into a buffer that grows with what arrives, so
// that a record on a pipe claiming a large payload costs memory only for what it has.
Buffer read_growing(io::InputStream& in, uint64_t n) {
  std::vector<uint8_t> bytes;
  for (uint64_t at = 0; at < n;) {
    const uint64_t piece = std::min<uint64_t>(n - at, std::max<uint64_t>(at, 1 << 20));
    bytes.resize(at + piece);
    in.read_exact(bytes.data() + at, piece, "record");
    at += piece;
  }
  Buffer out = Buffer::allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  return out;
}

// Hand `bytes` to the sink in pieces that share its storage.
void deliver(const Buffer& bytes, const LosslessSink& sink) {
  for (size_t at = 0; at < bytes.size(); at += kPieceBytes) sink(bytes.slice(at, std::min(kPieceBytes, bytes.size() - at)));
}

}  // namespace

void Container::open(io::InputStream& in, const BitxBase* base, bool need_base) {
  const uint64_t begin = in.position();
  header = read_file_header(in);
  header_bytes = in.position() - begin;
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
      throw invalid_input(fmt::format("container is a BitX delta against a base (SHA-256 {}...)",
                                      short_hex(header.base_sha256)),
                          in.name())
          .with_option("codec.base");
    if (base->sha256() != header.base_sha256)
      throw invalid_input(fmt::format("{} is not the base this container was made against (SHA-256 {}..., "
                                      "expected {}...)",
                                      base->name(), short_hex(base->sha256()), short_hex(header.base_sha256)),
                          in.name());
  }
}

std::string Container::where(const io::InputStream& in, std::optional<size_t> tensor) const {
  if (tensor && *tensor < st.tensors.size()) return in.name() + ": tensor '" + st.tensors[*tensor].name + "'";
  return in.name();
}

const io::TensorInfo* Container::check_record(const RecordHeader& r) const {
  if (r.kind == Kind::kTensor) {
    if (r.id >= st.tensors.size()) throw invalid_input("record names a tensor the header does not have");
    const io::TensorInfo& info = st.tensors[r.id];
    if (r.decoded != info.nbytes) throw invalid_input("record size does not match the tensor");
    if ((r.codec == TkzCodec::kBitxRef || r.codec == TkzCodec::kBitxDelta) && !has_base())
      throw invalid_input("BitX record in a container made without a base");
    if (r.codec == TkzCodec::kBitxRef && r.stored != 0) throw invalid_input("BitX reference with a payload");
    return &info;
  }
  if (r.codec != TkzCodec::kZstd && r.codec != TkzCodec::kRaw) throw invalid_input("opaque record with a tensor codec");
  return nullptr;
}

std::string Container::entry_name(const IndexEntry& e) const {
  return e.kind == Kind::kTensor && e.id < st.tensors.size() ? st.tensors[e.id].name : std::string();
}

RecordHeader read_record_header(io::InputStream& in) {
  uint8_t head[kRecordHeaderBytes];
  in.read_exact(head, kRecordHeaderBytes, "record header");
  return parse_record_header(head);
}

void check_frame_claim(std::span<const uint8_t> head, const RecordHeader& r) {
  if (r.codec == TkzCodec::kZstdWhole) {
    const unsigned long long claimed = ZSTD_getFrameContentSize(head.data(), head.size());
    if (claimed != r.decoded) throw invalid_input("zstd frame does not claim the record's size");
    return;
  }
  if (r.codec != TkzCodec::kLossless && r.codec != TkzCodec::kZstd && r.codec != TkzCodec::kBitxDelta) return;
  const uint64_t claimed = lossless_claimed_size(head.first(std::min(head.size(), kLosslessHeaderBytes)), r.stored);
  if (claimed != r.decoded) throw invalid_input(fmt::format("frame claims {} bytes, the record {}", claimed, r.decoded));
}

void check_payload_claims(io::InputStream& in, const RecordHeader& r) {
  if (r.stored > max_payload(r.decoded)) throw invalid_input("record payload too large");
  if (r.codec == TkzCodec::kRaw && r.stored != r.decoded) throw invalid_input("raw record of another size");
  if (r.codec == TkzCodec::kZstdWhole && r.decoded > kTkzZstdWholeMax)
    throw invalid_input("zstd-whole record of a tensor over 16 MiB");
  if (in.size() && r.stored > *in.size() - in.position()) throw invalid_input("truncated record");
  check_frame_claim(in.peek(static_cast<size_t>(std::min<uint64_t>(r.stored, kFrameHeadBytes))), r);
}

void decode_tensor_record(io::InputStream& in, const Container& c, const RecordHeader& r, const io::TensorInfo& info,
                          const TkzDecodeOptions& options, const std::function<void()>& begin,
                          const LosslessSink& sink) {
  if (c.has_base() && (r.codec == TkzCodec::kBitxRef || r.codec == TkzCodec::kBitxDelta)) {
    // The base is checked only when this tensor needs it.
    if (options.base == nullptr)
      throw invalid_input(fmt::format("tensor is a BitX delta against a base (SHA-256 {}...)",
                                      short_hex(c.header.base_sha256)))
          .with_option("codec.base");
    if (options.base->sha256() != c.header.base_sha256)
      throw invalid_input(options.base->name() + " is not the base this container was made against");
  }
  check_payload_claims(in, r);
  begin();
  decode_record(in, r, &info, options, sink);
}

void decode_record(io::InputStream& in, const RecordHeader& r, const io::TensorInfo* info,
                   const TkzDecodeOptions& options, const LosslessSink& sink, BufferPool* pool) {
  check_payload_claims(in, r);
  const BitxBase::Tensor* base = nullptr;
  if (r.codec == TkzCodec::kBitxRef || r.codec == TkzCodec::kBitxDelta) {
    if (options.base == nullptr) throw invalid_input("BitX record needs the base").with_option("codec.record_base");
    base = options.base->match(*info);
    if (base == nullptr) throw invalid_input("the base has no tensor of this name, dtype and shape");
    if (bitx_tensor_hash(base->bytes) != r.base_hash)
      throw invalid_input("the base's tensor differs from the one this record was made against");
  }
  if (r.codec == TkzCodec::kLossy) {
    // The checksum covers the frame: the decoded values are an approximation that only
    // the decoder defines. The frame's claims are checked before it is decoded.
    Buffer payload = read_growing(in, r.stored);
    std::span<const uint8_t> frame(payload.data(), payload.size());
    if (hash(frame) != r.hash) throw invalid_input("checksum mismatch");
    const LossyFrameInfo claim = lossy_inspect(frame);
    if (claim.dtype != info->dtype || claim.shape != info->shape)
      throw invalid_input("lossy frame does not match the tensor's dtype and shape");
    uint64_t done = 0;
    lossy_decode_stream(
        frame,
        [&](Buffer piece) {
          done += piece.size();
          sink(std::move(piece));
        },
        options.threads);
    if (done != r.decoded) throw internal_error("lossy record decoded to another size");
    return;
  }

  // The record's XXH3 of the decoded bytes is checked where no frame checks them: raw,
  // zstd-whole and BitX reference records (a BitX delta's base tensor was checked above).
  const bool by_frame = frame_checked(r.codec);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  uint64_t done = 0;  // decoded bytes delivered
  auto hashed = [&](Buffer piece) {
    if (!by_frame) XXH3_64bits_update(&state, piece.data(), piece.size());
    done += piece.size();
    sink(std::move(piece));
  };
  auto source = [&in, pool](size_t n) { return in.read_view(n, "record", pool); };
  switch (r.codec) {
    case TkzCodec::kLossless:
    case TkzCodec::kZstd:
      lossless_decompress_stream(source, r.stored, r.decoded, hashed, options.threads, pool);
      break;
    case TkzCodec::kBitxRef:
      // The base outlives every use of its bytes: the caller holds it until the
      // restore is complete.
      deliver(Buffer::borrow_const(base->bytes.data(), base->bytes.size()), hashed);
      break;
    case TkzCodec::kBitxDelta:
      if (base->bytes.size() != r.decoded) throw invalid_input("the base's tensor has another size");
      lossless_decompress_stream(
          source, r.stored, r.decoded,
          [&](Buffer piece) {
            bitx_xor({piece.data(), piece.size()}, base->bytes.subspan(done, piece.size()),
                     {piece.mutable_data(), piece.size()});
            hashed(std::move(piece));
          },
          options.threads, pool);
      break;
    case TkzCodec::kRaw:
      for (uint64_t at = 0; at < r.decoded; at += kPieceBytes) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kPieceBytes, r.decoded - at));
        hashed(source(n));
      }
      break;
    case TkzCodec::kZstdWhole: {
      Buffer payload = read_growing(in, r.stored);
      Buffer out = Buffer::allocate(static_cast<size_t>(r.decoded));
      const size_t n = ZSTD_decompress(out.mutable_data(), out.size(), payload.data(), payload.size());
      if (ZSTD_isError(n) || n != r.decoded) throw invalid_input("zstd frame does not decode to the record's size");
      deliver(out, hashed);
      break;
    }
    case TkzCodec::kLossy: break;  // above
  }
  if (done != r.decoded) throw internal_error("record decoded to another size");
  if (!by_frame && XXH3_64bits_digest(&state) != r.hash) throw invalid_input("checksum mismatch");
}

std::vector<IndexEntry> read_index_sequential(io::InputStream& in, uint64_t count, Footer* footer_out) {
  // Each entry is read as its length field says, so nothing is allocated in advance.
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
    throw e.with_where(in.name());
  }
  return ra;
}

void check_index(const Container& c, const std::vector<IndexEntry>& index, const Footer& footer,
                 const std::string& where) {
  auto tensor_where = [&](size_t id) { return where + ": tensor '" + c.st.tensors[id].name + "'"; };
  std::vector<bool> listed(c.st.tensors.size(), false);
  // Every record lies between the file header and the end record, which the index
  // follows: bounded so, no sum below overflows.
  if (footer.index_offset < c.header_bytes + kRecordHeaderBytes)
    throw invalid_input("container footer does not match the record layout", where);
  const uint64_t end_record = footer.index_offset - kRecordHeaderBytes;
  uint64_t offset = c.header_bytes;                     // where the next record must start
  uint64_t original = c.header.original_header.size();  // bytes the records restore
  for (const IndexEntry& e : index) {
    if (e.offset != offset || end_record - offset < kRecordHeaderBytes ||
        e.stored > end_record - offset - kRecordHeaderBytes)
      throw invalid_input("container index does not match the record layout", where);
    offset += kRecordHeaderBytes + e.stored;
    if (e.kind == Kind::kTensor) {
      if (e.id >= c.st.tensors.size() || listed[e.id]) throw invalid_input("corrupt container index", where);
      listed[e.id] = true;
      if (e.decoded != c.st.tensors[e.id].nbytes)
        throw invalid_input(fmt::format("container index gives {} bytes, the header {}", e.decoded,
                                        c.st.tensors[e.id].nbytes),
                            tensor_where(e.id));
    }
    if (e.decoded > UINT64_MAX - original) throw invalid_input("corrupt container index", where);
    original += e.decoded;
  }
  for (size_t id = 0; id < listed.size(); ++id)
    if (!listed[id]) throw invalid_input("container index lacks the tensor", tensor_where(id));
  if (offset != end_record) throw invalid_input("container footer does not match the record layout", where);
  if (footer.original_bytes != original)
    throw invalid_input(fmt::format("container footer claims {} original bytes, its records hold {}",
                                    footer.original_bytes, original),
                        where);
}

void check_end_record(const RecordHeader& end, const std::vector<IndexEntry>& index, const Footer& footer,
                      const std::string& where) {
  if (end.kind != Kind::kEnd || end.id != index.size() || end.decoded != footer.original_bytes || end.stored != 0)
    throw invalid_input("end record does not match the records", where);
}

}  // namespace tk::codec::tkz
