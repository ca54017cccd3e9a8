// Reading a .tkz container: restore the whole file, extract one tensor, list records.
// Every record is decoded a chunk batch at a time and handed on as it goes, so memory is
// bounded by a batch, not by a tensor (container_reader.h has the shared parts).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include <omp.h>

#include "tk/codec/container.h"
#include "tk/codec/container_format.h"
#include "tk/codec/container_reader.h"
#include "tk/core/error.h"
#include "zstd_file.h"

namespace tk::codec {
namespace {

using namespace tkz;

// Opaque records hold at most this many bytes (the writer makes 16 MiB ones).
constexpr uint64_t kMaxOpaqueRecord = uint64_t{1} << 30;
// Restored bytes that may wait for the digest's thread: with a batch being decoded and
// one being written, the restore stays within a few batches.
constexpr size_t kMaxPendingHash = size_t{32} << 20;
constexpr size_t kHashSlice = size_t{16} << 20;
// Decoded bytes that may wait for the writing thread, and the buffers kept for reuse.
constexpr size_t kMaxPendingWrite = size_t{16} << 20;
constexpr size_t kPoolBytes = size_t{128} << 20;

// Check the records on a pipe after the one extracted: skip to the end record, then
// check it, the index and the footer against every record seen.
void finish_sequential(io::InputStream& in, const Container& c, uint64_t in_begin, std::vector<IndexEntry> seen) {
  RecordHeader end;
  for (;;) {
    const uint64_t offset = in.position() - in_begin;
    RecordHeader r = read_record_header(in);
    if (r.kind == Kind::kEnd) {
      end = r;
      break;
    }
    const io::TensorInfo* info = c.check_record(r);
    in.skip(r.stored, "record");
    seen.push_back({info ? info->name : std::string(), r.kind, r.codec, r.id, offset, r.decoded, r.stored});
  }
  Footer footer;
  std::vector<IndexEntry> index = read_index_sequential(in, seen.size(), &footer);
  for (size_t i = 0; i < seen.size(); ++i)
    if (!same_entry(index[i], seen[i])) throw invalid_input("container index does not match its records", in.name());
  check_index(c, index, footer, in.name());
  check_end_record(end, index, footer, in.name());
}

}  // namespace

TkzDecompressResult tkz_decompress(io::InputStream& in, io::OutputStream& out, const TkzDecodeOptions& options) {
  if (io::is_zstd_frame(in.peek(4))) {
    const ZstdFileResult z = zstd_file_decompress(in, &out);
    TkzDecompressResult result;
    result.zstd_frame = true;
    result.bytes_in = z.bytes_in;
    result.bytes_out = z.bytes_out;
    result.digest = z.digest;
    return result;
  }
  // Records are decoded from a mapping of a container file, not copied out of it.
  in.map();
  const uint64_t in_begin = in.position();
  Container c;
  c.open(in, options.base, true);
  TkzDecompressResult result;
  BackgroundDigest digest(c.header.digest, kMaxPendingHash);
  const uint64_t out_begin = out.position();
  // Decoded pieces are written and hashed on threads of their own, so that the decode
  // of the next batch overlaps the copy into the page cache and the hash.
  BackgroundQueue writer(
      [&](const Buffer& bytes) {
        out.write(bytes.data(), bytes.size());
        digest.update(bytes);
      },
      kMaxPendingWrite);
  auto emit = [&](Buffer bytes) {
    if (bytes.size() <= kMaxPendingWrite) return writer.push(std::move(bytes));
    // A piece of one large chunk is written here once the writer is idle, and copied to
    // the hash thread in slices, so that it is freed (and the next one decoded) while
    // the hash thread holds at most kMaxPendingHash: memory stays bounded by one piece.
    writer.wait();
    out.write(bytes.data(), bytes.size());
    for (size_t at = 0; at < bytes.size(); at += kHashSlice) {
      const size_t n = std::min(kHashSlice, bytes.size() - at);
      Buffer slice = Buffer::allocate(n);
      std::memcpy(slice.mutable_data(), bytes.data() + at, n);
      digest.update(std::move(slice));
    }
  };
  // Buffers in flight: one waiting for the writer and one being written, two waiting
  // for the hash and one being hashed, one being decoded and its coded bytes.
  BufferPool pool(kPoolBytes);
  // The writer takes a core of its own: decoding on every core as well slowed a
  // restore at -j 2 on two cores to 1.2x its time at -j 1.
  TkzDecodeOptions decode_options = options;
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  decode_options.threads = std::max(1, threads - 1);
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
      decode_record(in, r, info, decode_options, emit, &pool);
      if (r.codec == TkzCodec::kLossy) result.exact = false;
      position += r.decoded;
      seen.push_back({info ? info->name : std::string(), r.kind, r.codec, r.id, offset, r.decoded, r.stored});
    } catch (const Error& e) {
      throw e.with_where(c.where(in, expected));
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
  check_index(c, index, footer, in.name());
  writer.finish();
  result.digest = digest.finish();
  if (result.exact && result.digest.bytes != footer.digest)
    throw invalid_input(fmt::format("{} of the restored file differs from the original's", result.digest.label()),
                        in.name());
  result.bytes_in = in.position() - in_begin;
  result.bytes_out = out.position() - out_begin;
  return result;
}

io::TensorInfo tkz_extract_stream(io::InputStream& in, std::string_view name, const TkzDecodeOptions& options,
                                  const TkzTensorSink& sink) {
  if (io::is_zstd_frame(in.peek(4)))
    throw usage_error("the file is one zstd frame of a whole file, not a container of tensors", in.name())
        .with_option("codec.opaque_restore");
  const bool seekable = in.is_regular_file() && in.position() == 0;
  const uint64_t in_begin = in.position();
  Container c;
  c.open(in, options.base, false);
  if (c.header.source != Source::kSafetensors)
    throw usage_error(fmt::format("container holds a {} file as opaque bytes, not tensors",
                                  io::format_name(format_of(c.header.source))),
                      in.name())
        .with_option("codec.opaque_restore");
  auto it = std::find_if(c.st.tensors.begin(), c.st.tensors.end(), [&](const auto& t) { return t.name == name; });
  if (it == c.st.tensors.end()) throw usage_error("no tensor named '" + std::string(name) + "'", in.name());
  const size_t id = static_cast<size_t>(it - c.st.tensors.begin());
  const io::TensorInfo& info = *it;

  bool in_sink = false;
  try {
    // Locate the record: through the index on a file (checked against the header and
    // footer first), by reading the records in order on a pipe.
    RecordHeader r;
    std::vector<IndexEntry> seen;
    if (seekable) {
      RandomAccess ra = open_random_access(in);
      check_index(c, ra.index, ra.footer, in.name());
      check_end_record(parse_record_header(ra.file.data() + ra.footer.index_offset - kRecordHeaderBytes), ra.index,
                       ra.footer, in.name());
      auto e = std::find_if(ra.index.begin(), ra.index.end(),
                            [&](const IndexEntry& x) { return x.kind == Kind::kTensor && x.id == id; });
      // check_index lists every tensor once, records end to end before the index.
      in.skip(e->offset - in.position(), "record");
      r = read_record_header(in);
      if (r.kind != Kind::kTensor || r.id != id || r.codec != e->codec || r.stored != e->stored ||
          r.decoded != e->decoded)
        throw invalid_input("container index does not match the record");
    } else {
      for (;;) {
        const uint64_t offset = in.position() - in_begin;
        r = read_record_header(in);
        if (r.kind == Kind::kEnd) throw invalid_input("container has no record for the tensor");
        const io::TensorInfo* record_info = c.check_record(r);
        seen.push_back({record_info ? record_info->name : std::string(), r.kind, r.codec, r.id, offset, r.decoded,
                        r.stored});
        if (r.kind == Kind::kTensor && r.id == id) break;
        in.skip(r.stored, "record");
      }
    }
    c.check_record(r);
    // The sink's own errors (an output that refuses the tensor) keep their location.
    decode_tensor_record(
        in, c, r, info, options,
        [&] {
          in_sink = true;
          sink.begin(info);
          in_sink = false;
        },
        [&](Buffer piece) {
          in_sink = true;
          sink.piece({piece.data(), piece.size()});
          in_sink = false;
        });
    if (!seekable) finish_sequential(in, c, in_begin, std::move(seen));
    return info;
  } catch (const Error& e) {
    if (in_sink) throw;
    throw e.with_where(in.name() + ": tensor '" + info.name + "'");
  }
}

Tensor tkz_extract(io::InputStream& in, std::string_view name, const TkzDecodeOptions& options,
                   io::TensorInfo* info_out) {
  Tensor tensor;
  uint64_t filled = 0;
  TkzTensorSink sink;
  sink.begin = [&](const io::TensorInfo& info) { tensor = Tensor::empty(info.dtype, info.shape); };
  sink.piece = [&](std::span<const uint8_t> piece) {
    if (!piece.empty()) std::memcpy(tensor.mutable_data() + filled, piece.data(), piece.size());
    filled += piece.size();
  };
  io::TensorInfo info = tkz_extract_stream(in, name, options, sink);
  if (info_out) *info_out = info;
  return tensor;
}

TkzListing tkz_list(io::InputStream& in) {
  if (io::is_zstd_frame(in.peek(4))) {
    const ZstdFileResult z = zstd_file_decompress(in, nullptr);
    TkzListing listing;
    listing.zstd_frame = true;
    listing.digest = z.digest;
    listing.original_bytes = z.bytes_out;
    listing.container_bytes = z.bytes_in;
    return listing;
  }
  const bool seekable = in.is_regular_file() && in.position() == 0;
  const uint64_t in_begin = in.position();
  Container c;
  c.open(in, nullptr, false);
  TkzListing listing;
  listing.source = format_of(c.header.source);
  listing.has_base = c.has_base();
  listing.base_sha256 = c.header.base_sha256;
  listing.metadata = c.st.metadata;
  std::vector<IndexEntry> index;
  Footer footer;
  RecordHeader end;
  if (seekable) {
    RandomAccess ra = open_random_access(in);
    check_index(c, ra.index, ra.footer, in.name());
    // Each record header agrees with its entry; check_index placed them in the file.
    for (const IndexEntry& e : ra.index) {
      try {
        const RecordHeader r = parse_record_header(ra.file.data() + e.offset);
        const io::TensorInfo* info = r.kind == Kind::kEnd ? nullptr : c.check_record(r);
        if (!same_entry(e, {info ? info->name : std::string(), r.kind, r.codec, r.id, e.offset, r.decoded, r.stored}))
          throw invalid_input("container index does not match the record");
        check_frame_claim({ra.file.data() + e.offset + kRecordHeaderBytes, static_cast<size_t>(r.stored)}, r);
      } catch (const Error& err) {
        throw err.with_where(c.where(in, e.kind == Kind::kTensor ? std::optional<size_t>(e.id) : std::nullopt));
      }
    }
    try {
      end = parse_record_header(ra.file.data() + ra.footer.index_offset - kRecordHeaderBytes);
    } catch (const Error& err) {
      throw err.with_where(in.name());
    }
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
        throw e.with_where(in.name());
      }
      if (r.kind == Kind::kEnd) {
        end = r;
        break;
      }
      const io::TensorInfo* info = nullptr;
      try {
        info = c.check_record(r);
        check_payload_claims(in, r);
      } catch (const Error& e) {
        throw e.with_where(c.where(in, r.kind == Kind::kTensor ? std::optional<size_t>(r.id) : std::nullopt));
      }
      in.skip(r.stored, "record");
      seen.push_back({info ? info->name : std::string(), r.kind, r.codec, r.id, offset, r.decoded, r.stored});
    }
    index = read_index_sequential(in, seen.size(), &footer);
    for (size_t i = 0; i < seen.size(); ++i)
      if (!same_entry(index[i], seen[i])) throw invalid_input("container index does not match its records", in.name());
    check_index(c, index, footer, in.name());
    listing.container_bytes = in.position() - in_begin;
  }
  check_end_record(end, index, footer, in.name());
  listing.digest.kind = c.header.digest;
  listing.digest.bytes = footer.digest;
  listing.original_bytes = footer.original_bytes;
  for (const IndexEntry& e : index) {
    TkzEntry t;
    t.is_tensor = e.kind == Kind::kTensor;
    t.name = c.entry_name(e);
    if (t.is_tensor) {
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
