#include "tk/codec/tkz_reader.h"

#include <sys/stat.h>

#include <cstring>

#include "tk/codec/container_reader.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"
#include "zstd_file.h"

namespace tk::codec {

TkzReader::TkzReader(std::string path, const TkzDecodeOptions& options)
    : path_(std::move(path)), options_(options) {
  auto in = io::InputStream::open(path_);
  if (!in->is_regular_file()) throw usage_error("a .tkz container is read as a tensor file only from a file", path_);
  if (io::is_zstd_frame(in->peek(4)))
    throw usage_error("the file is one zstd frame of a whole file, not a container of tensors", path_)
        .with_option("codec.opaque_skipped");
  listing_ = tkz_list(*in);
  file_ = Buffer::map_file(path_);  // stays readable if the path goes (a spooled copy)
  name_ = in->name();
  container_ = std::make_unique<tkz::Container>();
  container_->open(*io::InputStream::from_buffer(file_, name_), nullptr, false);
  metadata_ = listing_.metadata;
  for (size_t e = 0; e < listing_.entries.size(); ++e) {
    const TkzEntry& entry = listing_.entries[e];
    if (!entry.is_tensor) continue;
    infos_.push_back({entry.name, entry.dtype, entry.shape, entry.bytes});
    entry_of_.push_back(e);
  }
  if (listing_.source != io::FileFormat::kSafetensors) {
    const std::string what = listing_.source == io::FileFormat::kUnknown ? "file" : io::format_name(listing_.source);
    io::SkippedObject opaque{"(opaque bytes)",
                             "the container keeps the original " + what + " file as opaque bytes, not tensors"};
    opaque.option = "codec.opaque_skipped";
    skipped_.push_back(std::move(opaque));
  }
}

TkzReader::~TkzReader() = default;

Tensor TkzReader::read(size_t index) {
  if (index >= infos_.size()) throw internal_error("tensor index out of range", path_);
  const TkzEntry& e = entry(index);
  const io::TensorInfo& info = infos_[index];
  try {
    auto in = io::InputStream::from_buffer(file_.slice(e.offset, file_.size() - e.offset), name_);
    const tkz::RecordHeader r = tkz::read_record_header(*in);
    container_->check_record(r);  // tkz_list matched it with the index
    Tensor tensor;
    uint64_t filled = 0;
    tkz::decode_tensor_record(
        *in, *container_, r, info, options_, [&] { tensor = Tensor::empty(info.dtype, info.shape); },
        [&](Buffer piece) {
          if (piece.size() != 0) std::memcpy(tensor.mutable_data() + filled, piece.data(), piece.size());
          filled += piece.size();
        });
    return tensor;
  } catch (const Error& err) {
    throw err.with_where(name_ + ": tensor '" + info.name + "'");
  }
}

bool is_tkz_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  try {
    auto in = io::InputStream::open(path);
    return io::detect_format(*in) == io::FileFormat::kTkz;
  } catch (const Error&) {
    return false;  // unreadable: the generic opener reports it
  }
}

}  // namespace tk::codec
