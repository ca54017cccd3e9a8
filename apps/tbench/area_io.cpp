// tbench io: the raw bandwidth of a directory (sequential write + fsync, and a read with
// the file's cache dropped), and how fast safetensors and HDF5 files load into memory,
// cold (cache dropped) and warm.
#include <filesystem>

#include "tbench.h"
#include "tk/bench/disk.h"
#include "tk/core/buffer.h"
#include "tk/core/error.h"
#include "tk/io/tensor_file.h"

namespace tk::tbench {
namespace {

namespace fs = std::filesystem;

// Remove the scratch directory however the cell ends.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& dir) : path(make_scratch_dir(dir, "io")) {}
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Open the file and read every tensor into owned memory (no mapping): what a loader that
// hands out ordinary arrays does. Returns the tensor bytes.
uint64_t load_all(const std::string& path) {
  io::ReadOptions options;
  options.allow_mmap = false;
  auto reader = io::open_reader(path, options);
  uint64_t bytes = 0;
  for (size_t i = 0; i < reader->tensors().size(); ++i) bytes += reader->read(i).nbytes();
  return bytes;
}

void run_raw(const Cell& cell, Result& r) {
  uint64_t bytes = cell.input->data.nbytes();
  Buffer data;
  if (bytes == 0) {  // a file input: measure with its size
    bytes = fs::file_size(cell.input->file);
    data = Buffer::zeros(bytes);
  } else {
    data = cell.input->data.buffer();
  }
  ScratchDir scratch(cell.dir);
  std::string file = scratch.path + "/raw.bin";
  auto write = bench::measure([&] { bench::write_file_synced(file, data.data(), bytes); }, cell.timing, bytes);
  Buffer buffer = Buffer::allocate(std::min<uint64_t>(bytes, uint64_t(8) << 20));
  bool dropped = true;
  auto read = bench::measure([&] { bench::read_file_through(file, buffer.mutable_data(), buffer.size()); },
                             cell.timing, bytes, [&] { dropped = bench::drop_file_cache(file) && dropped; });
  r.set_rate("write_mb_s", write, bytes, 1e6, "MB/s");
  r.set_rate("read_mb_s", read, bytes, 1e6, "MB/s");
  if (!dropped) r.note = "the kernel refused to drop the page cache: reads may be from memory";
}

// Load speed of `path` cold and warm; the file is written first for synthetic inputs.
void run_load(const Cell& cell, Result& r, io::FileFormat format) {
  std::optional<ScratchDir> scratch;
  std::string path = cell.input->file;
  if (path.empty()) {
    scratch.emplace(cell.dir);
    path = scratch->path + (format == io::FileFormat::kHdf5 ? "/input.h5" : "/input.safetensors");
    io::WriteOptions wo;
    wo.format = format;
    auto writer = io::open_writer(path, wo);
    writer->begin({{"x", cell.input->data.dtype(), cell.input->data.shape(), cell.input->data.nbytes()}}, {});
    writer->write(0, cell.input->data);
    writer->finish();
  } else {
    auto probe = io::open_reader(path);
    if (probe->format() != format)
      throw unavailable(std::string("not a ") + io::format_name(format) + " file", path);
  }
  uint64_t bytes = load_all(path);
  auto cold = bench::measure([&] { load_all(path); }, cell.timing, bytes, [&] { bench::drop_file_cache(path); });
  auto warm = bench::measure([&] { load_all(path); }, cell.timing, bytes);
  r.set_rate("load_mb_s", cold, bytes, 1e6, "MB/s");
  r.set_rate("load_warm_mb_s", warm, bytes, 1e6, "MB/s");
}

}  // namespace

Area io_area() {
  Area a;
  a.name = "io";
  a.description = "Raw read/write bandwidth of a directory; safetensors and HDF5 load speed";
  a.methods = {
      {"raw", {}, "sequential write + fsync; read with the file's page cache dropped"},
      {"safetensors", {}, "open and read every tensor into memory, cold and warm"},
      {"hdf5", {}, "open and read every dataset into memory, cold and warm"},
  };
  a.default_methods = {"raw", "safetensors", "hdf5"};
  a.default_shapes = {"4096x1024"};
  a.default_dists = {"gaussian"};
  a.run = [](const Cell& cell, Result& r) {
    if (cell.method == "raw") return run_raw(cell, r);
    run_load(cell, r, cell.method == "hdf5" ? io::FileFormat::kHdf5 : io::FileFormat::kSafetensors);
  };
  return a;
}

}  // namespace tk::tbench
