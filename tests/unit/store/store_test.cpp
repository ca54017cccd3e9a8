// The model store: byte-exact round trips of safetensors (every common dtype, empty and
// shared tensors, trailing bytes) and opaque files, deduplication, BitX objects against
// the most similar base, gc keeping BitX bases, and the errors a damaged store gives.
#include "tk/store/store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "test_util.h"
#include "tk/codec/sha256.h"
#include "tk/core/dtype.h"
#include "tk/core/dtype_array.h"
#include "tk/io/safetensors.h"
#include "tk/store/manifest.h"
#include "tk/store/objects.h"

namespace tk::store {
namespace {

namespace stdfs = std::filesystem;
using test::kind_of;

struct NamedBytes {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;
};

// A safetensors file holding `tensors` in the given order.
std::vector<uint8_t> safetensors_file(const std::vector<NamedBytes>& tensors, const io::Metadata& metadata = {}) {
  std::vector<io::TensorInfo> infos;
  for (const auto& t : tensors) infos.push_back({t.name, t.dtype, t.shape, t.bytes.size()});
  std::vector<uint8_t> header = io::safetensors_make_header(infos, metadata);
  std::vector<uint8_t> file(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) file[i] = static_cast<uint8_t>(n >> (8 * i));
  file.insert(file.end(), header.begin(), header.end());
  for (const auto& t : tensors) file.insert(file.end(), t.bytes.begin(), t.bytes.end());
  return file;
}

// bf16 weights drawn from N(0, sigma).
std::vector<uint8_t> bf16_weights(size_t count, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(count);
  for (auto& x : v) x = normal(rng);
  std::vector<uint8_t> out(count * 2);
  cast_array(DType::kF32, v.data(), DType::kBF16, out.data(), count, {});
  return out;
}

// A fine-tune of bf16 `base`: every value plus N(0, 5e-4), rounded back to bf16.
std::vector<uint8_t> fine_tune(const std::vector<uint8_t>& base, uint32_t seed) {
  size_t count = base.size() / 2;
  std::vector<float> v(count);
  cast_array(DType::kBF16, base.data(), DType::kF32, v.data(), count, {});
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 5e-4f);
  for (auto& x : v) x += noise(rng);
  std::vector<uint8_t> out(base.size());
  cast_array(DType::kF32, v.data(), DType::kBF16, out.data(), count, {});
  return out;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<NamedBytes> model(uint32_t seed, size_t layers = 4, size_t values = 20000) {
  std::vector<NamedBytes> t;
  for (size_t i = 0; i < layers; ++i)
    t.push_back({"layer" + std::to_string(i) + ".weight", DType::kBF16, {static_cast<int64_t>(values / 100), 100},
                 bf16_weights(values, seed + static_cast<uint32_t>(i))});
  return t;
}

std::vector<NamedBytes> fine_tuned(const std::vector<NamedBytes>& base, uint32_t seed) {
  std::vector<NamedBytes> t = base;
  for (size_t i = 0; i < t.size(); ++i) t[i].bytes = fine_tune(base[i].bytes, seed + static_cast<uint32_t>(i));
  return t;
}

class StoreTest : public ::testing::Test {
 protected:
  test::TempDir tmp{"store"};
  std::string dir() const { return tmp.path() + "/store"; }

  std::string file(const std::string& name, const std::vector<uint8_t>& bytes) { return tmp.write(name, bytes); }

  std::vector<uint8_t> get(const Store& store, const std::string& name) {
    std::vector<uint8_t> out;
    auto stream = io::OutputStream::to_memory(&out);
    StoreGetResult r = store.get(name, *stream);
    stream->commit();
    EXPECT_EQ(r.sha256, codec::sha256_hex(codec::sha256(out)));
    return out;
  }

  // Paths of every object file.
  std::vector<std::string> object_files() const {
    std::vector<std::string> out;
    for (const auto& e : stdfs::recursive_directory_iterator(dir() + "/objects"))
      if (e.is_regular_file()) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  // The manifest of `name` as parsed.
  StoreManifest manifest(const std::string& name) const {
    std::ifstream in(dir() + "/manifests/" + store_manifest_file_name(name), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return store_manifest_parse(bytes, name);
  }

  const StoreSegment& tensor_segment(const StoreManifest& m, const std::string& tensor) const {
    for (const auto& s : m.segments)
      if (s.tensor == tensor) return s;
    throw std::runtime_error("no tensor " + tensor);
  }
};

TEST_F(StoreTest, RoundTripsEveryDtypeByteForByte) {
  std::vector<NamedBytes> tensors;
  uint32_t seed = 1;
  for (DType d : {DType::kBF16, DType::kF16, DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kU8,
                  DType::kBool, DType::kF8E4M3}) {
    size_t n = 1000 + seed * 37;
    tensors.push_back({std::string("t_") + dtype_name(d), d, {static_cast<int64_t>(n)},
                       random_bytes(dtype_storage_bytes(d, n), seed++)});
  }
  tensors.push_back({"empty", DType::kF32, {0, 3}, {}});
  tensors.push_back({"scalar", DType::kF32, {}, random_bytes(4, 99)});
  std::vector<uint8_t> bytes = safetensors_file(tensors, {{"format", "pt"}});
  Store store = Store::open(dir(), true);
  StoreAddResult r = store.add(file("m.safetensors", bytes), {});
  EXPECT_TRUE(r.safetensors);
  EXPECT_EQ(r.name, "m.safetensors");
  EXPECT_EQ(r.tensors, tensors.size());
  EXPECT_EQ(r.logical_bytes, bytes.size());
  EXPECT_EQ(get(store, "m.safetensors"), bytes);
}

TEST_F(StoreTest, StoresOpaqueFilesAndTrailingBytesExactly) {
  Store store = Store::open(dir(), true);
  std::vector<uint8_t> text = random_bytes(100000, 7);
  StoreAddResult r = store.add(file("notes.bin", text), {});
  EXPECT_FALSE(r.safetensors);
  EXPECT_EQ(get(store, "notes.bin"), text);

  std::vector<uint8_t> st = safetensors_file(model(3, 2, 1000));
  st.insert(st.end(), {1, 2, 3, 4, 5});  // bytes after the data the header describes
  store.add(file("tail.safetensors", st), {});
  EXPECT_EQ(get(store, "tail.safetensors"), st);

  std::vector<uint8_t> empty;
  store.add(file("empty", empty), {});
  EXPECT_TRUE(get(store, "empty").empty());
}

TEST_F(StoreTest, StoresEachDistinctTensorOnce) {
  std::vector<NamedBytes> a = model(10);
  std::vector<NamedBytes> b = model(10);
  b[0].name = "renamed";               // same bytes under another name
  b[3].bytes = bf16_weights(20000, 77);  // one new tensor
  Store store = Store::open(dir(), true);
  StoreAddResult ra = store.add(file("a.safetensors", safetensors_file(a)), {.deltas = false});
  EXPECT_EQ(ra.tensors_plain, 4u);
  size_t objects_a = object_files().size();
  StoreAddResult rb = store.add(file("b.safetensors", safetensors_file(b)), {.deltas = false});
  EXPECT_EQ(rb.tensors_existing, 3u);
  EXPECT_EQ(rb.tensors_plain, 1u);
  EXPECT_EQ(object_files().size(), objects_a + 2);  // the new tensor and b's header

  StoreAddResult again = store.add(file("a.safetensors", safetensors_file(a)), {});
  EXPECT_TRUE(again.replaced);
  EXPECT_EQ(again.tensors_existing, 4u);
  EXPECT_EQ(object_files().size(), objects_a + 2);
  EXPECT_EQ(get(store, "a.safetensors"), safetensors_file(a));
  EXPECT_EQ(get(store, "b.safetensors"), safetensors_file(b));
}

TEST_F(StoreTest, FineTuneBecomesBitxObjectsAgainstTheMostSimilarBase) {
  std::vector<NamedBytes> base = model(100);
  std::vector<NamedBytes> other = model(200);  // same names and shapes, unrelated values
  std::vector<NamedBytes> ft = fine_tuned(base, 300);
  Store store = Store::open(dir(), true);
  store.add(file("other.safetensors", safetensors_file(other)), {});
  store.add(file("base.safetensors", safetensors_file(base)), {});
  std::vector<uint8_t> ft_bytes = safetensors_file(ft);
  StoreAddResult r = store.add(file("ft.safetensors", ft_bytes), {});
  EXPECT_EQ(r.base, "base.safetensors");
  EXPECT_GT(r.base_similarity, 0.75);
  EXPECT_EQ(r.tensors_delta, 4u);

  StoreManifest m = manifest("ft.safetensors");
  EXPECT_EQ(m.base, "base.safetensors");
  StoreObjects objects(dir());
  const StoreSegment& s = tensor_segment(m, "layer0.weight");
  auto h = objects.header(s.key);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, StoreObjectKind::kBitx);
  StoreManifest mb = manifest("base.safetensors");
  EXPECT_EQ(h->base, tensor_segment(mb, "layer0.weight").key);
  // The delta is the point: well under the plain object's size.
  EXPECT_LT(*objects.stored_size(s.key) * 1.4, *objects.stored_size(h->base));
  EXPECT_EQ(get(store, "ft.safetensors"), ft_bytes);

  // Unrelated weights fall below the similarity bar: stored plainly.
  StoreAddResult r2 = store.add(file("new.safetensors", safetensors_file(model(400))), {});
  EXPECT_EQ(r2.base, "");
  EXPECT_EQ(r2.tensors_delta, 0u);
}

TEST_F(StoreTest, ExplicitBaseIsUsedAndUnknownBaseRefused) {
  std::vector<NamedBytes> base = model(500);
  Store store = Store::open(dir(), true);
  store.add(file("base.safetensors", safetensors_file(base)), {});
  store.add(file("other.safetensors", safetensors_file(model(600))), {});
  std::vector<uint8_t> ft = safetensors_file(fine_tuned(base, 700));
  StoreAddResult r = store.add(file("ft.safetensors", ft), {.name = "ft", .base = "base.safetensors"});
  EXPECT_EQ(r.base, "base.safetensors");
  EXPECT_EQ(r.tensors_delta, 4u);
  EXPECT_EQ(get(store, "ft"), ft);
  std::vector<uint8_t> ft2 = safetensors_file(fine_tuned(base, 800));
  EXPECT_EQ(kind_of([&] { store.add(file("ft2.safetensors", ft2), {.base = "nope"}); }), ErrorKind::kInvalidInput);
  EXPECT_FALSE(store.contains("ft2.safetensors"));
}

TEST_F(StoreTest, ChainsOfFineTunesRestore) {
  std::vector<NamedBytes> m = model(900, 2, 5000);
  Store store = Store::open(dir(), true);
  std::vector<std::vector<uint8_t>> files;
  for (int gen = 0; gen < 4; ++gen) {
    files.push_back(safetensors_file(m));
    StoreAddResult r =
        store.add(file("gen" + std::to_string(gen), files.back()), {.base = gen ? "gen" + std::to_string(gen - 1) : ""});
    EXPECT_EQ(r.tensors_delta, gen ? 2u : 0u);
    m = fine_tuned(m, 1000 + gen);
  }
  for (int gen = 0; gen < 4; ++gen) EXPECT_EQ(get(store, "gen" + std::to_string(gen)), files[gen]);
}

TEST_F(StoreTest, GcKeepsBitxBasesAndRemovesTheRest) {
  std::vector<NamedBytes> base = model(1100);
  std::vector<uint8_t> ft = safetensors_file(fine_tuned(base, 1200));
  Store store = Store::open(dir(), true);
  // Metadata makes the headers differ, so that base has one object of its own.
  store.add(file("base.safetensors", safetensors_file(base, {{"name", "base"}})), {});
  store.add(file("ft.safetensors", ft), {});
  file("stray", std::vector<uint8_t>(10, 0));
  stdfs::copy_file(tmp.path() + "/stray", dir() + "/tmp/1-2-3");  // what a killed add leaves
  size_t before = object_files().size();

  store.remove("base.safetensors");
  EXPECT_FALSE(store.contains("base.safetensors"));
  StoreGcReport r = store.gc();
  EXPECT_EQ(r.objects_removed, 1u);  // base's header only: its tensors are ft's BitX bases
  EXPECT_EQ(r.temp_removed, 1u);
  EXPECT_EQ(object_files().size(), before - 1);
  EXPECT_EQ(get(store, "ft.safetensors"), ft);

  store.remove("ft.safetensors");
  r = store.gc();
  EXPECT_EQ(r.objects_removed, before - 1);
  EXPECT_TRUE(object_files().empty());
  StoreStats st = store.stats();
  EXPECT_EQ(st.objects, 0u);
  EXPECT_TRUE(st.files.empty());
}

TEST_F(StoreTest, StatsAddUp) {
  std::vector<NamedBytes> base = model(1300);
  Store store = Store::open(dir(), true);
  store.add(file("base.safetensors", safetensors_file(base)), {});
  store.add(file("ft.safetensors", safetensors_file(fine_tuned(base, 1400))), {});
  store.add(file("copy.safetensors", safetensors_file(base)), {});
  StoreStats st = store.stats();
  ASSERT_EQ(st.files.size(), 3u);
  EXPECT_EQ(st.files[0].name, "base.safetensors");
  EXPECT_EQ(st.files[1].name, "copy.safetensors");
  EXPECT_EQ(st.files[0].stored_bytes, st.files[1].stored_bytes);
  EXPECT_EQ(st.files[0].unique_bytes, 0u);  // everything is shared with the copy
  // ft shares only the header with them (same names, dtypes and shapes).
  StoreManifest ft = manifest("ft.safetensors");
  EXPECT_EQ(st.files[2].unique_bytes,
            st.files[2].stored_bytes - *StoreObjects(dir()).stored_size(ft.segments[0].key));
  uint64_t on_disk = 0;
  for (const auto& p : object_files()) on_disk += stdfs::file_size(p);
  EXPECT_EQ(st.object_bytes, on_disk);
  EXPECT_EQ(st.logical_bytes, 3 * safetensors_file(base).size());
  EXPECT_EQ(st.unreferenced_objects, 0u);
  EXPECT_LT(st.stored_bytes(), st.logical_bytes / 2);
}

TEST_F(StoreTest, CorruptObjectIsNamed) {
  std::vector<NamedBytes> m = model(1500);
  Store store = Store::open(dir(), true);
  store.add(file("m.safetensors", safetensors_file(m)), {});
  StoreManifest mm = manifest("m.safetensors");
  const StoreSegment& s = tensor_segment(mm, "layer2.weight");
  std::string path = StoreObjects(dir()).path(s.key);
  std::vector<uint8_t> obj;
  {
    std::ifstream in(path, std::ios::binary);
    obj.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  obj[obj.size() / 2] ^= 0x10;
  stdfs::remove(path);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(obj.data()), obj.size());
  try {
    get(store, "m.safetensors");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(e.where().find("tensor 'layer2.weight'"), std::string::npos) << e.where();
    EXPECT_NE(e.where().find(codec::sha256_hex(s.key)), std::string::npos) << e.where();
  }
}

TEST_F(StoreTest, AnObjectsClaimedSizeIsCheckedAgainstItsFrameFirst) {
  // An object whose header claims 2^50 bytes (and a manifest expecting them): the frame
  // decodes to far less, which is found before anything of the claim is allocated.
  std::vector<NamedBytes> m = model(1500);
  Store store = Store::open(dir(), true);
  store.add(file("m.safetensors", safetensors_file(m)), {});
  // A copy: the manifest is a temporary.
  const StoreSegment s = tensor_segment(manifest("m.safetensors"), "layer2.weight");
  std::string path = StoreObjects(dir()).path(s.key);
  std::vector<uint8_t> obj;
  {
    std::ifstream in(path, std::ios::binary);
    obj.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const uint64_t claim = uint64_t{1} << 50;
  std::memcpy(obj.data() + 8, &claim, 8);
  stdfs::remove(path);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(obj.data()), obj.size());
  EXPECT_EQ(test::kind_of([&] { StoreObjects(dir()).load(s.key, claim, "t"); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(test::kind_of([&] { StoreObjects(dir()).stream(s.key, claim, "t", [](std::span<const uint8_t>) {}); }),
            ErrorKind::kInvalidInput);
}

TEST_F(StoreTest, CorruptBaseOfABitxObjectIsNamed) {
  std::vector<NamedBytes> base = model(1550);
  Store store = Store::open(dir(), true);
  store.add(file("base.safetensors", safetensors_file(base)), {});
  store.add(file("ft.safetensors", safetensors_file(fine_tuned(base, 1560))), {});
  StoreManifest mb = manifest("base.safetensors");
  const StoreSegment& b = tensor_segment(mb, "layer0.weight");
  std::string path = StoreObjects(dir()).path(b.key);
  std::vector<uint8_t> obj;
  {
    std::ifstream in(path, std::ios::binary);
    obj.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  obj[obj.size() - 100] ^= 0x01;
  stdfs::remove(path);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(obj.data()), obj.size());
  try {
    get(store, "ft.safetensors");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_TRUE(std::string(e.what()).starts_with("corrupt object")) << e.what();
    // The base object is named last: it is the one at fault.
    EXPECT_TRUE(e.where().ends_with("object " + codec::sha256_hex(b.key))) << e.where();
    EXPECT_NE(e.where().find("ft.safetensors: tensor 'layer0.weight'"), std::string::npos) << e.where();
  }
}

// Flip one byte of a stored object in place (another writer of a shared store could).
void corrupt_object(const std::string& path, size_t from_end) {
  std::vector<uint8_t> obj;
  {
    std::ifstream in(path, std::ios::binary);
    obj.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  obj[obj.size() - from_end] ^= 0x01;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(obj.data()), obj.size());
}

TEST_F(StoreTest, AddReplacesACorruptObjectItWouldDeduplicateAgainst) {
  std::vector<NamedBytes> m = model(1570);
  std::vector<uint8_t> bytes = safetensors_file(m);
  Store store = Store::open(dir(), true);
  store.add(file("m.safetensors", bytes), {});
  const StoreSegment s = tensor_segment(manifest("m.safetensors"), "layer1.weight");
  corrupt_object(StoreObjects(dir()).path(s.key), 100);
  EXPECT_EQ(kind_of([&] { get(store, "m.safetensors"); }), ErrorKind::kInvalidInput);
  StoreAddResult r = store.add(file("m.safetensors", bytes), {});
  ASSERT_EQ(r.replaced_objects.size(), 1u);
  EXPECT_NE(r.replaced_objects[0].find(codec::sha256_hex(s.key)), std::string::npos) << r.replaced_objects[0];
  EXPECT_EQ(r.tensors_existing, m.size() - 1);
  EXPECT_EQ(get(store, "m.safetensors"), bytes);
  EXPECT_TRUE(store.verify(false).ok());
}

TEST_F(StoreTest, StatsCountsObjectsWithADamagedHeader) {
  Store store = Store::open(dir(), true);
  store.add(file("m.safetensors", safetensors_file(model(1575))), {});
  EXPECT_EQ(store.stats().bad_objects, 0u);
  const StoreSegment s = tensor_segment(manifest("m.safetensors"), "layer0.weight");
  const std::string path = StoreObjects(dir()).path(s.key);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.write("XXXX", 4);  // the magic
  }
  StoreStats st = store.stats();
  EXPECT_EQ(st.bad_objects, 1u);
  EXPECT_EQ(st.missing_objects, 0u);
  EXPECT_FALSE(store.verify(false).ok());
}

TEST_F(StoreTest, VerifyNamesACorruptBaseAndRepairLetsAddHealIt) {
  std::vector<NamedBytes> base = model(1580);
  std::vector<uint8_t> base_bytes = safetensors_file(base), ft_bytes = safetensors_file(fine_tuned(base, 1590));
  Store store = Store::open(dir(), true);
  store.add(file("base.safetensors", base_bytes), {});
  store.add(file("ft.safetensors", ft_bytes), {});
  StoreVerifyReport good = store.verify(false);
  EXPECT_TRUE(good.ok());
  EXPECT_EQ(good.manifests_checked, 2u);
  EXPECT_EQ(good.objects_checked, store.stats().objects);

  const StoreSegment b = tensor_segment(manifest("base.safetensors"), "layer0.weight");
  const std::string path = StoreObjects(dir()).path(b.key);
  corrupt_object(path, 100);
  StoreVerifyReport bad = store.verify(false);
  ASSERT_FALSE(bad.ok());
  // The object itself, and each file it breaks (ft through its BitX object).
  EXPECT_EQ(bad.problems.size(), 3u);
  EXPECT_NE(bad.problems[0].find(path), std::string::npos) << bad.problems[0];
  EXPECT_EQ(bad.unrestorable, (std::vector<std::string>{"base.safetensors", "ft.safetensors"}));
  EXPECT_TRUE(stdfs::exists(path));  // without repair nothing is removed

  StoreVerifyReport repaired = store.verify(true);
  EXPECT_EQ(repaired.removed, std::vector<std::string>{path});
  EXPECT_FALSE(stdfs::exists(path));
  store.add(file("base.safetensors", base_bytes), {});
  EXPECT_TRUE(store.verify(false).ok());
  EXPECT_EQ(get(store, "ft.safetensors"), ft_bytes);
}

TEST_F(StoreTest, MissingObjectAndMissingBaseAreInvalidInput) {
  std::vector<NamedBytes> base = model(1600);
  Store store = Store::open(dir(), true);
  store.add(file("base.safetensors", safetensors_file(base)), {});
  store.add(file("ft.safetensors", safetensors_file(fine_tuned(base, 1700))), {});
  StoreObjects objects(dir());
  StoreManifest mb = manifest("base.safetensors");
  const StoreSegment& b = tensor_segment(mb, "layer1.weight");
  stdfs::remove(objects.path(b.key));
  for (const char* name : {"base.safetensors", "ft.safetensors"}) {
    try {
      get(store, name);
      ADD_FAILURE() << "no error for " << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_EQ(std::string(e.what()), std::string(name) == "ft.safetensors" ? "missing base object" : "missing object");
      EXPECT_NE(e.where().find(codec::sha256_hex(b.key)), std::string::npos) << e.where();
    }
  }
  EXPECT_EQ(store.stats().missing_objects, 1u);
}

TEST_F(StoreTest, OpenAndNameErrors) {
  EXPECT_EQ(kind_of([&] { Store::open(dir(), false); }), ErrorKind::kIo);
  stdfs::create_directories(tmp.path() + "/plain");
  file("plain/x", std::vector<uint8_t>{1});
  EXPECT_EQ(kind_of([&] { Store::open(tmp.path() + "/plain", false); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { Store::open(tmp.path() + "/plain", true); }), ErrorKind::kUsage);
  Store store = Store::open(dir(), true);
  Store again = Store::open(dir(), false);
  std::vector<uint8_t> out;
  auto stream = io::OutputStream::to_memory(&out);
  EXPECT_EQ(kind_of([&] { store.get("nothing", *stream); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { store.remove("nothing"); }), ErrorKind::kInvalidInput);
  std::string f = file("x.bin", std::vector<uint8_t>{1, 2, 3});
  EXPECT_EQ(kind_of([&] { store.add(f, {.name = "bad\nname"}); }), ErrorKind::kUsage);
  store.add(f, {.name = "org/model v1.bin"});
  EXPECT_EQ(get(store, "org/model v1.bin"), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(store_manifest_file_name("org/model v1.bin"), "org%2Fmodel%20v1.bin.json");
  EXPECT_EQ(store_manifest_file_name(".hidden"), "%2Ehidden.json");
}

TEST_F(StoreTest, ADifferentFileUnderAStoredNameNeedsReplace) {
  Store store = Store::open(dir(), true);
  std::string one = file("one.bin", std::vector<uint8_t>{1, 2, 3});
  std::string two = file("two.bin", std::vector<uint8_t>{4, 5});
  EXPECT_FALSE(store.add(one, {.name = "m.bin"}).replaced);
  EXPECT_TRUE(store.add(one, {.name = "m.bin"}).replaced);  // the same file again: a re-add
  EXPECT_EQ(kind_of([&] { store.add(two, {.name = "m.bin"}); }), ErrorKind::kUsage);
  EXPECT_EQ(get(store, "m.bin"), (std::vector<uint8_t>{1, 2, 3}));
  StoreAddOptions replace;
  replace.name = "m.bin";
  replace.replace = true;
  EXPECT_TRUE(store.add(two, replace).replaced);
  EXPECT_EQ(get(store, "m.bin"), (std::vector<uint8_t>{4, 5}));
}

TEST(StoreManifest, RejectsMalformedManifests) {
  StoreManifest m;
  m.name = "m";
  m.kind = "opaque";
  m.size = 10;
  m.segments.push_back({0, 10, {}, "", "", {}});
  std::vector<uint8_t> good = store_manifest_serialize(m);
  EXPECT_EQ(store_manifest_parse(good, "m").size, 10u);
  auto text = [&](std::string from, std::string to) {
    std::string s(good.begin(), good.end());
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
    return std::vector<uint8_t>(s.begin(), s.end());
  };
  for (auto bad : {text("\"size\": 10", "\"size\": 11"), text("\"offset\": 0", "\"offset\": 1"),
                   text("\"kind\": \"opaque\"", "\"kind\": \"x\""), text("\"version\": 1", "\"version\": 2"),
                   text("\"key\": \"00", "\"key\": \"zz"), text("{", "["),
                   text("\"name\": \"m\"", "\"name\": \"m\", \"name\": \"n\""),
                   text("\"base\": \"\"", "\"base\": " + std::string(100000, '[') + std::string(100000, ']'))}) {
    EXPECT_EQ(kind_of([&] { store_manifest_parse(bad, "m"); }), ErrorKind::kInvalidInput);
  }
}

}  // namespace
}  // namespace tk::store
