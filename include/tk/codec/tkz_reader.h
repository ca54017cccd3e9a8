// A .tkz container read as a tensor file: the tensors of the safetensors file it holds,
// listed from its index without decoding, and decoded one at a time when read. Every
// tool that opens tensor files reads containers through this, so `tinfo`, `tinfo diff`,
// `tconvert` and `tcompress -d -t` see the same tensors that `tcompress -d` restores.
#pragma once

#include <memory>
#include <string>

#include "tk/codec/container.h"
#include "tk/core/buffer.h"
#include "tk/io/tensor_file.h"

namespace tk::codec {

namespace tkz {
struct Container;
}

class TkzReader final : public io::TensorReader {
 public:
  // Open the container at `path`, a regular file (a pipe is spooled by the caller),
  // and check its index and footer (tkz_list). A container that keeps a non-safetensors
  // file as opaque bytes opens with no tensors and lists that file in skipped(). A
  // container made against a BitX base needs `options.base` to read its tensors.
  TkzReader(std::string path, const TkzDecodeOptions& options = {});
  ~TkzReader() override;

  io::FileFormat format() const override { return io::FileFormat::kTkz; }
  bool random_access() const override { return true; }
  // Decode tensor `index` from its record, found through the index checked on opening
  // (its claims and its XXH3 are checked; a BitX record needs the base).
  Tensor read(size_t index) override;

  // Codecs, stored sizes and totals, for listings.
  const TkzListing& listing() const { return listing_; }
  // The listing's entry of tensor `index`.
  const TkzEntry& entry(size_t index) const { return listing_.entries[entry_of_[index]]; }

 private:
  std::string path_, name_;
  Buffer file_;  // the container mapped
  std::unique_ptr<tkz::Container> container_;  // its header, parsed once
  TkzDecodeOptions options_;
  TkzListing listing_;
  std::vector<size_t> entry_of_;  // tensor index -> listing entry
};

// Whether `path` names a regular file that starts as a .tkz container does.
bool is_tkz_file(const std::string& path);

}  // namespace tk::codec
