// libFuzzer target for the GGUF reader. Each input is a whole file, read through the
// sequential (stream) reader: every tensor's stored bytes and its decoded values. A file
// that is accepted must survive a write / read round trip with the same pairs, types and
// stored bytes. tk::Error is the expected way to fail (kUnavailable for the ggml types
// that are listed but not decoded); anything else is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/gguf.h"

namespace {

using tk::io::GgufReader;

void check(bool ok) {
  if (!ok) std::abort();
}

std::unique_ptr<GgufReader> open_memory(const uint8_t* data, size_t size) {
  tk::Buffer b = tk::Buffer::allocate(size);
  if (size) std::memcpy(b.mutable_data(), data, size);
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  return tk::io::gguf_open(tk::io::InputStream::from_buffer(std::move(b), "fuzz.gguf"), options);
}

void round_trip(const GgufReader& reader, const std::vector<tk::Buffer>& stored) {
  std::vector<tk::io::GgufTensorDecl> decls;
  for (size_t i = 0; i < stored.size(); ++i) decls.push_back({reader.entry(i).name, reader.entry(i).shape,
                                                             reader.entry(i).type});
  std::vector<uint8_t> sink;
  auto writer = tk::io::gguf_writer(tk::io::OutputStream::to_memory(&sink));
  try {
    writer->begin_gguf(decls, reader.kvs());
  } catch (const tk::Error& e) {
    check(e.kind() == tk::ErrorKind::kUsage);  // a name longer than llama.cpp takes, say
    return;
  }
  for (size_t i = stored.size(); i-- > 0;) writer->write_stored(i, {stored[i].data(), stored[i].size()});
  writer->finish();
  auto again = open_memory(sink.data(), sink.size());
  // Every pair comes back as it was, in order, but general.file_type: the writer states
  // what the written tensors are (gguf_rules.h), adding it to a model that had none.
  auto kept = [](const std::vector<tk::io::GgufKv>& kvs) {
    std::vector<const tk::io::GgufKv*> out;
    for (const tk::io::GgufKv& kv : kvs)
      if (kv.key != "general.file_type") out.push_back(&kv);
    return out;
  };
  const auto before = kept(reader.kvs()), after = kept(again->kvs());
  check(after.size() == before.size());
  for (size_t i = 0; i < before.size(); ++i)
    check(after[i]->key == before[i]->key && after[i]->value == before[i]->value);
  check(again->kvs().size() <= reader.kvs().size() + 1);
  check(again->tensors().size() == stored.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    tk::Buffer b = again->read_stored(i);
    check(again->entry(i).type == reader.entry(i).type && again->entry(i).shape == reader.entry(i).shape);
    check(b.size() == stored[i].size() && (b.empty() || std::memcmp(b.data(), stored[i].data(), b.size()) == 0));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto reader = open_memory(data, size);
    std::vector<tk::Buffer> stored;
    for (size_t i = 0; i < reader->tensors().size(); ++i) stored.push_back(reader->read_stored(i));
    auto decoder = open_memory(data, size);
    for (size_t i = 0; i < decoder->tensors().size(); ++i) {
      try {
        decoder->read(i);
      } catch (const tk::Error& e) {
        check(e.kind() == tk::ErrorKind::kUnavailable);
      }
    }
    round_trip(*reader, stored);
  } catch (const tk::Error& e) {
    check(e.kind() == tk::ErrorKind::kInvalidInput);
  }
  return 0;
}
