// The .tkz container: byte-identical round trips for every dtype and for opaque files,
// extraction of one tensor through the index (files) and by scanning (streams), BitX
// references and deltas against a base, and corruption (every truncation, a sample of
// bit flips) rejected as invalid input naming the tensor whose record is bad.
#include "tk/codec/container.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/io/safetensors.h"

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>

namespace tk::codec {
namespace {

using test::kind_of;
using Bytes = std::vector<uint8_t>;

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

Tensor random_tensor(DType dtype, Shape shape, uint32_t seed) {
  Tensor t = Tensor::empty(dtype, shape);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const uint64_t n = t.numel();
  if (dtype_is_float(dtype) && dtype_bits(dtype) >= 8) {
    std::vector<float> values(n);
    for (auto& v : values) v = normal(rng);
    cast_array(DType::kF32, values.data(), dtype, t.mutable_data(), n, {.saturate = true});
  } else {
    for (uint64_t i = 0; i < t.nbytes(); ++i) t.mutable_data()[i] = static_cast<uint8_t>(rng() % 7);
  }
  return t;
}

Bytes safetensors_bytes(const std::vector<NamedTensor>& tensors, const io::Metadata& metadata = {}) {
  Bytes out;
  auto writer = io::safetensors_writer(io::OutputStream::to_memory(&out));
  std::vector<io::TensorInfo> infos;
  for (const auto& t : tensors) infos.push_back({t.name, t.tensor.dtype(), t.tensor.shape(), t.tensor.nbytes()});
  writer->begin(infos, metadata);
  for (size_t i = 0; i < tensors.size(); ++i) writer->write(i, tensors[i].tensor);
  writer->finish();
  return out;
}

// One tensor of every dtype, with odd element counts where the dtype allows, plus empty
// tensors and a scalar.
std::vector<NamedTensor> every_dtype() {
  std::vector<NamedTensor> out;
  for (int d = 0; d < static_cast<int>(DType::kCount); ++d) {
    const DType dtype = static_cast<DType>(d);
    const int bits = dtype_bits(dtype);
    const int64_t unit = bits % 8 == 0 ? 1 : (bits == 4 ? 2 : 4);  // whole bytes for sub-byte types
    out.push_back({std::string("t_") + dtype_name(dtype), random_tensor(dtype, {unit * 37, 3}, 100 + d)});
  }
  out.push_back({"big.bf16", random_tensor(DType::kBF16, {300, 1001}, 7)});
  out.push_back({"empty", random_tensor(DType::kF32, {0, 5}, 1)});
  out.push_back({"empty_bf16", random_tensor(DType::kBF16, {0}, 1)});
  out.push_back({"scalar", random_tensor(DType::kF64, {}, 2)});
  return out;
}

// What `xxh128sum` prints, as a FileDigest.
FileDigest xxh3_128_digest(const Bytes& bytes) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.data(), bytes.size()));
  FileDigest d;
  std::memcpy(d.bytes.data(), canonical.digest, 16);
  return d;
}

std::unique_ptr<io::InputStream> memory_stream(const Bytes& bytes, const std::string& name = "mem.tkz") {
  Buffer b = Buffer::allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
  return io::InputStream::from_buffer(b, name);
}

// A container, also where the compact form would be smaller (these tests are about the
// container; the compact form has its own below, through compress_compact).
Bytes compress(const Bytes& original, const TkzCompressOptions& options = {}, TkzCompressResult* result = nullptr,
               bool compact = false) {
  Bytes out;
  auto in = memory_stream(original, "in");
  auto sink = io::OutputStream::to_memory(&out);
  TkzCompressOptions o = options;
  o.zstd_frame = compact;
  TkzCompressResult r = tkz_compress(*in, *sink, o);
  sink->commit();
  if (result) *result = r;
  return out;
}

Bytes decompress(const Bytes& container, const TkzDecodeOptions& options = {}) {
  Bytes out;
  auto in = memory_stream(container);
  auto sink = io::OutputStream::to_memory(&out);
  tkz_decompress(*in, *sink, options);
  sink->commit();
  return out;
}

std::string error_where(const Bytes& container, const TkzDecodeOptions& options = {}) {
  try {
    decompress(container, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what() << " (" << e.where() << ")";
    return e.where();
  }
  ADD_FAILURE() << "corrupt container accepted";
  return {};
}

TEST(Container, EveryDtypeRoundTripsByteForByte) {
  const Bytes original = safetensors_bytes(every_dtype(), {{"note", "kept verbatim"}});
  TkzCompressResult r;
  const Bytes tkz = compress(original, {}, &r);
  EXPECT_EQ(r.source, io::FileFormat::kSafetensors);
  EXPECT_EQ(r.bytes_in, original.size());
  EXPECT_EQ(r.bytes_out, tkz.size());
  EXPECT_EQ(r.digest, xxh3_128_digest(original));
  EXPECT_EQ(tkz[3], 2) << "an XXH3-128 container is version 2";
  EXPECT_LT(tkz.size(), original.size());
  EXPECT_TRUE(decompress(tkz) == original);
  for (const auto& e : r.entries) EXPECT_TRUE(e.is_tensor) << "no gaps in a reference-written file";
}

TEST(Container, OpaqueFilesRoundTrip) {
  std::mt19937 rng(3);
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{3 << 20}}) {
    Bytes original(size);
    for (auto& b : original) b = static_cast<uint8_t>(rng() % 5);
    TkzCompressOptions options;
    options.opaque_record_bytes = 1 << 20;  // several records for the larger sizes
    TkzCompressResult r;
    const Bytes tkz = compress(original, options, &r);
    EXPECT_EQ(r.source, io::FileFormat::kUnknown);
    EXPECT_EQ(r.entries.size(), (size + (1 << 20) - 1) >> 20);
    EXPECT_TRUE(decompress(tkz) == original) << size;
  }
}

TEST(Container, BytesAfterTheTensorsAreKept) {
  Bytes original = safetensors_bytes({{"a", random_tensor(DType::kF32, {10}, 1)}});
  const Bytes tail = {'t', 'a', 'i', 'l'};
  original.insert(original.end(), tail.begin(), tail.end());
  TkzCompressResult r;
  const Bytes tkz = compress(original, {}, &r);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_FALSE(r.entries[1].is_tensor);
  EXPECT_TRUE(decompress(tkz) == original);
}

TEST(Container, ExtractsOneTensorFromFilesAndStreams) {
  const auto tensors = every_dtype();
  const Bytes tkz = compress(safetensors_bytes(tensors));
  test::TempDir dir;
  const std::string path = dir.write("m.tkz", tkz);
  for (const auto& t : tensors) {
    for (bool from_file : {true, false}) {
      auto in = from_file ? io::InputStream::open(path) : memory_stream(tkz);
      io::TensorInfo info;
      Tensor got = tkz_extract(*in, t.name, {}, &info);
      EXPECT_EQ(info.name, t.name);
      EXPECT_EQ(got.dtype(), t.tensor.dtype());
      EXPECT_EQ(got.shape(), t.tensor.shape());
      ASSERT_EQ(got.nbytes(), t.tensor.nbytes());
      EXPECT_EQ(std::memcmp(got.data(), t.tensor.data(), got.nbytes()), 0) << t.name << (from_file ? " file" : " stream");
    }
  }
  auto in = io::InputStream::open(path);
  EXPECT_EQ(kind_of([&] { tkz_extract(*in, "nope", {}); }), ErrorKind::kUsage);
}

TEST(Container, ListingFromFileAndStreamAgree) {
  const auto tensors = every_dtype();
  const Bytes original = safetensors_bytes(tensors);
  const Bytes tkz = compress(original);
  test::TempDir dir;
  auto file = io::InputStream::open(dir.write("m.tkz", tkz));
  TkzListing a = tkz_list(*file);
  TkzListing b = tkz_list(*memory_stream(tkz));
  EXPECT_EQ(a.original_bytes, original.size());
  EXPECT_EQ(a.container_bytes, tkz.size());
  EXPECT_EQ(b.container_bytes, tkz.size());
  EXPECT_EQ(a.digest, xxh3_128_digest(original));
  ASSERT_EQ(a.entries.size(), tensors.size());
  ASSERT_EQ(b.entries.size(), tensors.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    EXPECT_EQ(a.entries[i].name, b.entries[i].name);
    EXPECT_EQ(a.entries[i].offset, b.entries[i].offset);
    EXPECT_EQ(a.entries[i].stored, b.entries[i].stored);
    EXPECT_EQ(a.entries[i].shape, b.entries[i].shape);
  }
}

TEST(Container, NotAContainerOrUnknownVersion) {
  EXPECT_EQ(kind_of([] { decompress(Bytes{'h', 'e', 'l', 'l', 'o'}); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([] { decompress(Bytes{}); }), ErrorKind::kInvalidInput);
  Bytes tkz = compress(safetensors_bytes({{"a", random_tensor(DType::kF32, {4}, 1)}}));
  tkz[3] = 3;
  test::expect_error_exact([&] { decompress(tkz); }, ErrorKind::kInvalidInput,
                           "unsupported .tkz version 3 (this build reads versions 1 and 2)");
}

// Which tensor's record holds byte `at` of the container (empty outside records).
std::string tensor_at(const TkzCompressResult& r, size_t at) {
  for (size_t i = 0; i < r.entries.size(); ++i) {
    const auto& e = r.entries[i];
    if (at >= e.offset && at < e.offset + 48 + e.stored) return e.name;
  }
  return {};
}

TEST(Container, EveryTruncationIsRejected) {
  std::vector<NamedTensor> tensors = {{"w1", random_tensor(DType::kBF16, {40, 30}, 1)},
                                      {"w2", random_tensor(DType::kF32, {17}, 2)},
                                      {"e", random_tensor(DType::kI8, {0}, 3)}};
  TkzCompressResult r;
  const Bytes tkz = compress(safetensors_bytes(tensors), {}, &r);
  for (size_t len = 0; len < tkz.size(); ++len) {
    const Bytes cut(tkz.begin(), tkz.begin() + len);
    const std::string where = error_where(cut);
    // A cut inside a tensor's record names that tensor.
    const std::string tensor = tensor_at(r, len);
    if (!tensor.empty() && len > r.entries.front().offset) {
      EXPECT_NE(where.find("tensor '" + tensor + "'"), std::string::npos) << len << ": " << where;
    }
  }
}

TEST(Container, BitFlipsAreRejectedNamingTheTensor) {
  std::vector<NamedTensor> tensors = {{"layer.0", random_tensor(DType::kBF16, {64, 64}, 1)},
                                      {"layer.1", random_tensor(DType::kF32, {33, 7}, 2)},
                                      {"ids", random_tensor(DType::kI64, {19}, 3)}};
  TkzCompressResult r;
  const Bytes tkz = compress(safetensors_bytes(tensors), {}, &r);
  std::mt19937 rng(11);
  for (int k = 0; k < 600; ++k) {
    Bytes bad = tkz;
    const size_t bit = rng() % (tkz.size() * 8);
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    const std::string where = error_where(bad);
    const std::string tensor = tensor_at(r, bit / 8);
    if (!tensor.empty()) {
      EXPECT_NE(where.find("tensor '" + tensor + "'"), std::string::npos) << bit << ": " << where;
    }
  }
}

TEST(Container, CorruptPayloadFoundByExtraction) {
  std::vector<NamedTensor> tensors = {{"a", random_tensor(DType::kBF16, {500}, 1)},
                                      {"b", random_tensor(DType::kBF16, {500}, 2)}};
  TkzCompressResult r;
  Bytes tkz = compress(safetensors_bytes(tensors), {}, &r);
  tkz[r.entries[1].offset + 48 + r.entries[1].stored / 2] ^= 0x10;
  test::TempDir dir;
  const std::string path = dir.write("bad.tkz", tkz);
  auto in = io::InputStream::open(path);
  EXPECT_NO_THROW(tkz_extract(*in, "a", {}));  // only the tensor asked for is decoded
  auto in2 = io::InputStream::open(path);
  try {
    tkz_extract(*in2, "b", {});
    ADD_FAILURE() << "corrupt record accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(e.where().find("tensor 'b'"), std::string::npos) << e.where();
  }
}

// ---- BitX ----

struct Family {
  Bytes base, tune;
  test::TempDir dir;
  std::string base_path;
};

// A base and a fine-tune in which "same" is unchanged, "moved" changed slightly,
// "unrelated" drawn afresh, "reshaped" has another shape and "new" has no counterpart.
std::unique_ptr<Family> family() {
  auto f = std::make_unique<Family>();
  Tensor same = random_tensor(DType::kBF16, {64, 32}, 1);
  Tensor moved = random_tensor(DType::kBF16, {64, 32}, 2);
  Tensor moved2 = moved.clone();
  for (size_t i = 0; i < moved2.nbytes(); i += 14) moved2.mutable_data()[i] ^= 1;
  f->base = safetensors_bytes({{"same", same},
                               {"moved", moved},
                               {"unrelated", random_tensor(DType::kBF16, {64, 32}, 5)},
                               {"reshaped", random_tensor(DType::kF32, {8}, 3)}});
  f->tune = safetensors_bytes({{"same", same},
                               {"moved", moved2},
                               {"unrelated", random_tensor(DType::kBF16, {64, 32}, 6)},
                               {"reshaped", random_tensor(DType::kF32, {2, 4}, 3)},
                               {"new", random_tensor(DType::kF16, {5}, 4)}});
  f->base_path = f->dir.write("base.safetensors", f->base);
  return f;
}

TEST(Container, BitxReferencesDeltasAndLosslessFallback) {
  auto f = family();
  auto base = BitxBase::open(f->base_path);
  EXPECT_EQ(base->sha256(), sha256(f->base));
  TkzCompressOptions options;
  options.base = base.get();
  TkzCompressResult r;
  const Bytes tkz = compress(f->tune, options, &r);
  std::map<std::string, TkzCodec> codecs;
  for (const auto& e : r.entries) codecs[e.name] = e.codec;
  EXPECT_EQ(codecs["same"], TkzCodec::kBitxRef);
  EXPECT_EQ(codecs["moved"], TkzCodec::kBitxDelta);
  // A delta of unrelated values is larger than the tensor coded alone; 32 and 10 bytes
  // code larger than they are.
  EXPECT_EQ(codecs["unrelated"], TkzCodec::kLossless);
  EXPECT_EQ(codecs["reshaped"], TkzCodec::kRaw);
  EXPECT_EQ(codecs["new"], TkzCodec::kRaw);
  for (const auto& e : r.entries) {
    if (e.codec == TkzCodec::kBitxRef) {
      EXPECT_EQ(e.stored, 0u);
    }
  }

  TkzDecodeOptions with_base;
  with_base.base = base.get();
  EXPECT_TRUE(decompress(tkz, with_base) == f->tune);
  // The unchanged and unmatched tensors extract without the base; the others need it.
  EXPECT_EQ(kind_of([&] { tkz_extract(*memory_stream(tkz), "same", {}); }), ErrorKind::kInvalidInput);
  EXPECT_NO_THROW(tkz_extract(*memory_stream(tkz), "new", {}));
  EXPECT_NO_THROW(tkz_extract(*memory_stream(tkz), "moved", with_base));
}

TEST(Container, EveryTensorTakesItsSmallestExactCoding) {
  // Weights from 16 levels, as a dequantized model stores them: zstd on the raw bytes
  // finds the repeated elements that byte planes break up.
  Tensor levels = Tensor::empty(DType::kF32, {256, 512});
  std::mt19937 rng(3);
  for (uint64_t i = 0; i < levels.numel(); ++i) {
    const float v = 0.013f * static_cast<float>(static_cast<int>(rng() % 16) - 8);
    std::memcpy(levels.mutable_data() + 4 * i, &v, 4);
  }
  Tensor noise = Tensor::empty(DType::kU8, {70000});
  for (uint64_t i = 0; i < noise.nbytes(); ++i) noise.mutable_data()[i] = static_cast<uint8_t>(rng());
  const Tensor weights = random_tensor(DType::kBF16, {256, 256}, 9);
  const Tensor tiny = random_tensor(DType::kF32, {4}, 10);
  Tensor zeros = Tensor::empty(DType::kF32, {384});  // a bias never trained: 1536 zero bytes
  std::memset(zeros.mutable_data(), 0, zeros.nbytes());
  const Bytes original =
      safetensors_bytes({{"levels", levels}, {"noise", noise}, {"weights", weights}, {"tiny", tiny}, {"zeros", zeros}});
  TkzCompressResult r;
  const Bytes tkz = compress(original, {}, &r);
  std::map<std::string, TkzEntry> entries;
  for (const auto& e : r.entries) entries[e.name] = e;
  // One zstd frame of the whole tensor: at 512 KiB it decodes in one piece and beats the
  // same zstd cut into 1 MiB-chunk frames by their fixed bytes.
  EXPECT_EQ(entries["levels"].codec, TkzCodec::kZstdWhole);
  EXPECT_LT(entries["levels"].stored,
            lossless_compress(DType::kF32, {levels.data(), levels.nbytes()}).size());
  EXPECT_EQ(entries["noise"].codec, TkzCodec::kRaw);
  EXPECT_EQ(entries["noise"].stored, noise.nbytes());
  EXPECT_EQ(entries["weights"].codec, TkzCodec::kLossless);
  EXPECT_EQ(entries["tiny"].codec, TkzCodec::kRaw);
  EXPECT_EQ(entries["zeros"].codec, TkzCodec::kZstdWhole);
  EXPECT_LT(entries["zeros"].stored, 32u);  // less than a frame's header
  for (const auto& e : r.entries) {
    EXPECT_LE(e.stored, e.bytes) << e.name;
    const Tensor& t = e.name == "levels"    ? levels
                      : e.name == "noise"   ? noise
                      : e.name == "weights" ? weights
                      : e.name == "zeros"   ? zeros
                                            : tiny;
    EXPECT_LE(e.stored, lossless_compress(DType::kU8, {t.data(), t.nbytes()}).size()) << e.name << ": beats zstd";
  }
  EXPECT_TRUE(decompress(tkz) == original);
  for (const char* name : {"levels", "noise", "tiny", "zeros"}) {
    const Tensor back = tkz_extract(*memory_stream(tkz), name, {});
    const std::string n = name;
    const Tensor& want = n == "levels" ? levels : n == "noise" ? noise : n == "zeros" ? zeros : tiny;
    EXPECT_EQ(std::memcmp(back.data(), want.data(), want.nbytes()), 0) << name;
  }
}

TEST(Container, BitxRefusesMissingOrDifferentBase) {
  auto f = family();
  auto base = BitxBase::open(f->base_path);
  TkzCompressOptions options;
  options.base = base.get();
  const Bytes tkz = compress(f->tune, options);
  EXPECT_EQ(kind_of([&] { decompress(tkz); }), ErrorKind::kInvalidInput);
  Bytes other = f->base;
  other.back() ^= 1;
  auto wrong = BitxBase::open(f->dir.write("other.safetensors", other));
  TkzDecodeOptions with_wrong;
  with_wrong.base = wrong.get();
  try {
    decompress(tkz, with_wrong);
    ADD_FAILURE() << "wrong base accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("is not the base"), std::string::npos) << e.what();
  }
}

TEST(Container, BitxXorMatchesScalar) {
  std::mt19937 rng(5);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{1001}}) {
    Bytes a(n), b(n), out(n);
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<uint8_t>(rng()), b[i] = static_cast<uint8_t>(rng());
    bitx_xor(a, b, out);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] ^ b[i]);
  }
}

TEST(Container, BitxFramesOfEitherLayoutDecode) {
  // bitx_encode writes the delta layout; deltas written before it (regrouped planes,
  // flags 0) are in existing containers and stores, and must still decode.
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    const Tensor base = random_tensor(dtype, {5000}, 21);
    Tensor tuned = random_tensor(dtype, {5000}, 21);
    for (size_t i = 0; i < tuned.nbytes(); i += 7) tuned.mutable_data()[i] ^= 1;
    const std::span<const uint8_t> b(base.data(), base.nbytes()), t(tuned.data(), tuned.nbytes());
    const Bytes now = bitx_encode(dtype, t, b);
    EXPECT_EQ(now[7], 1) << "delta layout";
    Bytes x(t.begin(), t.end());
    bitx_xor(x, b, x);
    const Bytes before = lossless_compress(dtype, x);
    EXPECT_EQ(before[7], 0);
    for (const Bytes* frame : {&now, &before}) {
      Bytes out(t.size());
      bitx_decode(*frame, b, out);
      EXPECT_TRUE(std::equal(out.begin(), out.end(), t.begin())) << dtype_name(dtype);
    }
  }
}

TEST(Container, ExtractHandsATensorOverInBoundedPieces) {
  // 24 MiB of mostly zero f32 in 1 MiB chunks: two batches, from a file and a pipe.
  Tensor big = Tensor::zeros(DType::kF32, {6 << 20});
  const Tensor noise = random_tensor(DType::kF32, {1000}, 4);
  std::memcpy(big.mutable_data() + (20 << 20), noise.data(), noise.nbytes());
  const Bytes tkz = compress(safetensors_bytes({{"small", noise}, {"big", big}}));
  test::TempDir dir;
  const std::string path = dir.write("m.tkz", tkz);
  for (bool from_file : {true, false}) {
    auto in = from_file ? io::InputStream::open(path) : memory_stream(tkz);
    Bytes got;
    size_t largest = 0;
    TkzTensorSink sink;
    sink.begin = [&](const io::TensorInfo& info) { EXPECT_EQ(info.nbytes, big.nbytes()); };
    sink.piece = [&](std::span<const uint8_t> p) {
      got.insert(got.end(), p.begin(), p.end());
      largest = std::max(largest, p.size());
    };
    tkz_extract_stream(*in, "big", {}, sink);
    ASSERT_EQ(got.size(), big.nbytes());
    EXPECT_EQ(std::memcmp(got.data(), big.data(), got.size()), 0);
    EXPECT_LE(largest, size_t{16} << 20);
  }
}

// `tkz` with the footer changed by `edit` (given its 80 bytes) and its checksum
// recomputed: a container whose every checksum holds but whose footer lies.
template <class Edit>
Bytes with_footer(Bytes tkz, Edit edit) {
  uint8_t* footer = tkz.data() + tkz.size() - 80;
  edit(footer);
  uint64_t index_offset, index_bytes;
  std::memcpy(&index_offset, footer, 8);
  std::memcpy(&index_bytes, footer + 8, 8);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, tkz.data() + index_offset, index_bytes);
  XXH3_64bits_update(&state, footer, 64);
  const uint64_t sum = XXH3_64bits_digest(&state);
  std::memcpy(footer + 64, &sum, 8);
  return tkz;
}

Bytes with_footer_original_size(const Bytes& tkz, int64_t delta) {
  return with_footer(tkz, [delta](uint8_t* footer) {
    uint64_t original;
    std::memcpy(&original, footer + 24, 8);
    original += static_cast<uint64_t>(delta);
    std::memcpy(footer + 24, &original, 8);
  });
}

TEST(Container, AFooterClaimingAnotherSizeIsRefusedEverywhere) {
  const Bytes tkz = compress(safetensors_bytes(every_dtype()));
  test::TempDir dir;
  for (int64_t delta : {-1, 1}) {
    const Bytes bad = with_footer_original_size(tkz, delta);
    const std::string path = dir.write("bad.tkz", bad);
    for (bool from_file : {true, false}) {
      auto in = [&] { return from_file ? io::InputStream::open(path) : memory_stream(bad); };
      EXPECT_EQ(kind_of([&] { tkz_list(*in()); }), ErrorKind::kInvalidInput) << from_file;
      EXPECT_EQ(kind_of([&] { tkz_extract(*in(), "scalar", {}); }), ErrorKind::kInvalidInput) << from_file;
    }
    EXPECT_FALSE(error_where(bad).empty());
  }
  // The unchanged container passes the same checks.
  EXPECT_NO_THROW(tkz_list(*memory_stream(with_footer_original_size(tkz, 0))));
}

TEST(Container, Sha256OnRequestIsAVersion1ContainerAndChecked) {
  const Bytes original = safetensors_bytes(every_dtype());
  TkzCompressOptions options;
  options.digest = DigestKind::kSha256;
  TkzCompressResult r;
  const Bytes tkz = compress(original, options, &r);
  EXPECT_EQ(tkz[3], 1) << "SHA-256 containers keep version 1, which every build reads";
  EXPECT_EQ(r.digest.kind, DigestKind::kSha256);
  const Sha256Digest sha = sha256(original);
  EXPECT_TRUE(std::equal(sha.begin(), sha.end(), r.digest.bytes.begin()));
  EXPECT_EQ(r.digest.hex(), sha256_hex(sha));
  EXPECT_TRUE(decompress(tkz) == original);
  const TkzListing l = tkz_list(*memory_stream(tkz));
  EXPECT_EQ(l.digest, r.digest);
  EXPECT_EQ(l.digest.name(), "sha256");
  // Version 1 records the XXH3 of every record's decoded bytes, as its earlier readers
  // check it; version 2 leaves it 0 where a lossless frame checks its chunks.
  const Bytes v2 = compress(original);
  const TkzListing l2 = tkz_list(*memory_stream(v2));
  size_t frames = 0;
  for (size_t i = 0; i < l.entries.size(); ++i) {
    uint64_t h1, h2;
    std::memcpy(&h1, tkz.data() + l.entries[i].offset + 24, 8);
    std::memcpy(&h2, v2.data() + l2.entries[i].offset + 24, 8);
    const bool frame = l2.entries[i].codec == TkzCodec::kLossless || l2.entries[i].codec == TkzCodec::kZstd;
    frames += frame;
    EXPECT_EQ(h2 == 0, frame) << l.entries[i].name;
    if (!frame) {
      EXPECT_EQ(h1, h2) << l.entries[i].name;
    }
    if (l.entries[i].bytes > 0) {
      EXPECT_NE(h1, 0u) << l.entries[i].name;
    }
  }
  EXPECT_GT(frames, 0u);
}

TEST(Container, ADigestThatDoesNotMatchTheRestoreIsRefused) {
  const Bytes original = safetensors_bytes(every_dtype());
  for (DigestKind kind : {DigestKind::kXxh3_128, DigestKind::kSha256}) {
    TkzCompressOptions options;
    options.digest = kind;
    const Bytes bad = with_footer(compress(original, options), [](uint8_t* footer) { footer[32] ^= 1; });
    try {
      decompress(bad);
      ADD_FAILURE() << "a wrong digest was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(kind == DigestKind::kSha256 ? "SHA-256 of the restored file differs"
                                                                        : "XXH3-128 of the restored file differs"),
                std::string::npos)
          << e.what();
    }
  }
}

// ---- The compact form: one zstd frame of the whole file ----

TEST(Container, FilesWithoutTensorsAreNeverLargerThanZstd) {
  std::mt19937 rng(7);
  for (size_t size : {size_t{0}, size_t{1}, size_t{70}, size_t{4095}, size_t{1 << 20}, size_t{(1 << 20) + 1}}) {
    Bytes original(size);
    for (auto& b : original) b = static_cast<uint8_t>('a' + rng() % 5);
    TkzCompressResult r;
    const Bytes z = compress(original, {}, &r, true);
    EXPECT_EQ(r.bytes_out, z.size());
    // What zstd -3 makes: a checksum, and one worker thread.
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, 1);
    Bytes peer(ZSTD_compressBound(size));
    peer.resize(ZSTD_compress2(c, peer.data(), peer.size(), original.data(), size));
    ZSTD_freeCCtx(c);
    EXPECT_LE(z.size(), peer.size()) << size;
    // Small files are a frame (the container's fixed bytes lose), files past the
    // comparison a frame without a comparison; up to 1 MiB the smaller of both.
    if (size <= 4095 || size > kTkzCompareMax) {
      EXPECT_TRUE(r.zstd_frame) << size;
    }
    if (r.zstd_frame) {
      EXPECT_TRUE(r.entries.empty());
      EXPECT_EQ(z, peer) << size;
      EXPECT_EQ(kind_of([&] { tkz_extract(*memory_stream(z), "a", {}); }), ErrorKind::kUsage);
    }
    EXPECT_TRUE(decompress(z) == original) << size;
    const TkzListing l = tkz_list(*memory_stream(z));
    EXPECT_EQ(l.zstd_frame, r.zstd_frame);
    EXPECT_EQ(l.original_bytes, size);
    EXPECT_EQ(l.container_bytes, z.size());
  }
}

TEST(Container, ASmallSafetensorsFileTakesTheSmallerForm) {
  // One 4x4 f32 tensor: the container's fixed bytes lose to one frame.
  const Bytes tiny = safetensors_bytes({{"w", random_tensor(DType::kF32, {4, 4}, 1)}});
  TkzCompressResult r;
  Bytes z = compress(tiny, {}, &r, true);
  EXPECT_TRUE(r.zstd_frame);
  EXPECT_EQ(r.source, io::FileFormat::kSafetensors);
  EXPECT_LT(z.size(), compress(tiny).size());
  EXPECT_TRUE(decompress(z) == tiny);
  // Random bf16 weights: the byte planes beat zstd, so the container stays.
  const Bytes planes = safetensors_bytes({{"w", random_tensor(DType::kBF16, {256, 256}, 2)}});
  const Bytes c = compress(planes, {}, &r, true);
  EXPECT_FALSE(r.zstd_frame);
  EXPECT_EQ(c, compress(planes));
}

TEST(Container, ZstdFramesThatCannotBeCheckedOrBoundedAreRefused) {
  const Bytes original(1000, 'x');
  const Bytes z = compress(original, {}, nullptr, true);
  auto refused = [](const Bytes& bad, const std::string& says) {
    try {
      decompress(bad);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  Bytes bad = z;
  bad.back() ^= 1;
  refused(bad, "checksum");
  refused(Bytes(z.begin(), z.end() - 3), "truncated zstd frame");
  refused(Bytes(z.begin(), z.begin() + 5), "truncated zstd frame header");
  Bytes two = z;
  two.insert(two.end(), z.begin(), z.end());
  refused(two, "a second zstd frame");
  // Header: magic, descriptor (single segment, checksum, 1-byte dictionary id), id 7,
  // content size 5, a raw last block of "hello", a checksum.
  refused({0x28, 0xB5, 0x2F, 0xFD, 0x25, 7, 5, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0}, "dictionary 7");
  // The same frame with no checksum flag, and one whose single segment claims 2^40 bytes.
  refused({0x28, 0xB5, 0x2F, 0xFD, 0x20, 5, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'}, "no checksum");
  refused({0x28, 0xB5, 0x2F, 0xFD, 0xE4, 0, 0, 0, 0, 0, 1, 0, 0, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0},
          "window");
}

}  // namespace
}  // namespace tk::codec
