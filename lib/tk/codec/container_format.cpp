#include "tk/codec/container_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/io/safetensors.h"

namespace tk::codec::tkz {

Source source_of(io::FileFormat format) {
  switch (format) {
    case io::FileFormat::kSafetensors: return Source::kSafetensors;
    case io::FileFormat::kHdf5: return Source::kHdf5;
    case io::FileFormat::kNpy: return Source::kNpy;
    default: return Source::kOpaque;
  }
}

io::FileFormat format_of(Source source) {
  switch (source) {
    case Source::kSafetensors: return io::FileFormat::kSafetensors;
    case Source::kHdf5: return io::FileFormat::kHdf5;
    case Source::kNpy: return io::FileFormat::kNpy;
    default: return io::FileFormat::kUnknown;
  }
}

uint64_t hash(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::vector<uint8_t> encode_file_header(const FileHeader& header) {
  std::vector<uint8_t> out(kFileHeaderBytes, 0);
  std::memcpy(out.data(), "TKZ", 3);
  out[3] = header.digest == DigestKind::kSha256 ? kVersionSha256 : kVersionXxh3;
  out[4] = static_cast<uint8_t>(header.source);
  out[5] = header.flags;
  store_le<uint64_t>(out.data() + 8, header.original_header.size());
  std::memcpy(out.data() + 16, header.base_sha256.data(), 32);
  out.resize(kFileHeaderBytes + header.original_header.size());
  if (!header.original_header.empty())
    std::memcpy(out.data() + kFileHeaderBytes, header.original_header.data(), header.original_header.size());
  append_le<uint64_t>(out, hash(out));
  return out;
}

FileHeader read_file_header(io::InputStream& in) {
  auto head = in.peek(4);
  if (head.size() < 4 || std::memcmp(head.data(), "TKZ", 3) != 0 || head[3] >= 16)
    throw invalid_input("not a .tkz container", in.name());
  if (head[3] != kVersionSha256 && head[3] != kVersionXxh3)
    throw invalid_input(fmt::format("unsupported .tkz version {} (this build reads versions {} and {})", head[3],
                                    kVersionSha256, kVersionXxh3),
                        in.name());
  std::vector<uint8_t> bytes(kFileHeaderBytes);
  in.read_exact(bytes.data(), kFileHeaderBytes, "container header");
  FileHeader header;
  header.source = static_cast<Source>(bytes[4]);
  header.flags = bytes[5];
  header.digest = bytes[3] == kVersionSha256 ? DigestKind::kSha256 : DigestKind::kXxh3_128;
  const uint64_t original_len = load_le<uint64_t>(bytes.data() + 8);
  // Bounded before anything is allocated: a safetensors header is at most 8 bytes of
  // length plus kSafetensorsMaxHeader of JSON, other sources keep none.
  const uint64_t max_len = header.source == Source::kSafetensors ? 8 + io::kSafetensorsMaxHeader : 0;
  if (bytes[4] > static_cast<uint8_t>(Source::kNpy) || (header.flags & ~kFlagBase) != 0 || original_len > max_len ||
      (header.source == Source::kSafetensors && original_len < 8))
    throw invalid_input("corrupt container header", in.name());
  std::memcpy(header.base_sha256.data(), bytes.data() + 16, 32);
  bytes.resize(kFileHeaderBytes + original_len + 8);
  in.read_exact(bytes.data() + kFileHeaderBytes, original_len + 8, "container header");
  const size_t checked = kFileHeaderBytes + original_len;
  if (hash({bytes.data(), checked}) != load_le<uint64_t>(bytes.data() + checked))
    throw invalid_input("container header checksum mismatch", in.name());
  header.original_header.assign(bytes.begin() + kFileHeaderBytes, bytes.begin() + checked);
  return header;
}

void encode_record_header(const RecordHeader& r, uint8_t out[kRecordHeaderBytes]) {
  std::memset(out, 0, kRecordHeaderBytes);
  out[0] = static_cast<uint8_t>(r.kind);
  out[1] = static_cast<uint8_t>(r.codec);
  store_le<uint32_t>(out + 4, r.id);
  store_le<uint64_t>(out + 8, r.decoded);
  store_le<uint64_t>(out + 16, r.stored);
  store_le<uint64_t>(out + 24, r.hash);
  store_le<uint64_t>(out + 32, r.base_hash);
  store_le<uint64_t>(out + 40, hash({out, 40}));
}

RecordHeader parse_record_header(const uint8_t in[kRecordHeaderBytes]) {
  if (hash({in, 40}) != load_le<uint64_t>(in + 40)) throw invalid_input("record header checksum mismatch");
  RecordHeader r;
  if (in[0] > static_cast<uint8_t>(Kind::kOpaque)) throw invalid_input("unknown record kind");
  r.kind = static_cast<Kind>(in[0]);
  if (r.kind != Kind::kEnd && (in[1] < 1 || in[1] > static_cast<uint8_t>(TkzCodec::kZstdWhole)))
    throw invalid_input(fmt::format("unknown record codec {}", in[1]));
  r.codec = static_cast<TkzCodec>(in[1]);
  r.id = load_le<uint32_t>(in + 4);
  r.decoded = load_le<uint64_t>(in + 8);
  r.stored = load_le<uint64_t>(in + 16);
  r.hash = load_le<uint64_t>(in + 24);
  r.base_hash = load_le<uint64_t>(in + 32);
  return r;
}

std::vector<uint8_t> encode_index_and_footer(const std::vector<IndexEntry>& index, const Footer& footer) {
  std::vector<uint8_t> out;
  for (const auto& e : index) {
    append_le<uint32_t>(out, static_cast<uint32_t>(e.name.size()));
    out.insert(out.end(), e.name.begin(), e.name.end());
    out.push_back(static_cast<uint8_t>(e.kind));
    out.push_back(static_cast<uint8_t>(e.codec));
    append_le<uint32_t>(out, e.id);
    append_le<uint64_t>(out, e.offset);
    append_le<uint64_t>(out, e.decoded);
    append_le<uint64_t>(out, e.stored);
  }
  const uint64_t index_bytes = out.size();
  append_le<uint64_t>(out, footer.index_offset);
  append_le<uint64_t>(out, index_bytes);
  append_le<uint64_t>(out, index.size());
  append_le<uint64_t>(out, footer.original_bytes);
  out.insert(out.end(), footer.digest.begin(), footer.digest.end());
  append_le<uint64_t>(out, hash(out));
  out.insert(out.end(), kFooterMagic, kFooterMagic + 8);
  return out;
}

Footer parse_footer(std::span<const uint8_t> b) {
  if (b.size() != kFooterBytes || std::memcmp(b.data() + 72, kFooterMagic, 8) != 0)
    throw invalid_input("container footer missing (truncated file?)");
  Footer f;
  f.index_offset = load_le<uint64_t>(b.data());
  f.index_bytes = load_le<uint64_t>(b.data() + 8);
  f.index_entries = load_le<uint64_t>(b.data() + 16);
  f.original_bytes = load_le<uint64_t>(b.data() + 24);
  std::memcpy(f.digest.data(), b.data() + 32, 32);
  return f;
}

std::vector<IndexEntry> parse_index(std::span<const uint8_t> index, std::span<const uint8_t> footer_bytes,
                                    const Footer& footer) {
  // One checksum over the index and the footer's fields, computed in two pieces.
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, index.data(), index.size());
  XXH3_64bits_update(&state, footer_bytes.data(), 64);
  if (XXH3_64bits_digest(&state) != load_le<uint64_t>(footer_bytes.data() + 64))
    throw invalid_input("container index checksum mismatch");
  std::vector<IndexEntry> entries;
  size_t at = 0;
  constexpr size_t kFixed = 4 + 1 + 1 + 4 + 3 * 8;
  for (uint64_t i = 0; i < footer.index_entries; ++i) {
    if (index.size() - at < 4) throw invalid_input("corrupt container index");
    const uint32_t name_len = load_le<uint32_t>(index.data() + at);
    if (index.size() - at < kFixed + uint64_t{name_len}) throw invalid_input("corrupt container index");
    IndexEntry e;
    e.name.assign(reinterpret_cast<const char*>(index.data() + at + 4), name_len);
    const uint8_t* p = index.data() + at + 4 + name_len;
    if (p[0] < 1 || p[0] > 2 || p[1] < 1 || p[1] > static_cast<uint8_t>(TkzCodec::kZstdWhole))
      throw invalid_input("corrupt container index");
    e.kind = static_cast<Kind>(p[0]);
    e.codec = static_cast<TkzCodec>(p[1]);
    e.id = load_le<uint32_t>(p + 2);
    e.offset = load_le<uint64_t>(p + 6);
    e.decoded = load_le<uint64_t>(p + 14);
    e.stored = load_le<uint64_t>(p + 22);
    entries.push_back(std::move(e));
    at += kFixed + name_len;
  }
  if (at != index.size()) throw invalid_input("corrupt container index");
  return entries;
}

}  // namespace tk::codec::tkz
