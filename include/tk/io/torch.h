// PyTorch checkpoints in the zip format of torch.save (PyTorch 1.6 and later; `.pt`,
// `.pth`, and HF `pytorch_model.bin`), read without executing anything. The pickle
// `NAME/data.pkl` is interpreted as data by a small machine that knows only the
// weights-only subset: dicts and OrderedDicts, lists, tuples, numbers, strings, None,
// and the tensor rebuild functions (`torch._utils._rebuild_tensor_v2`/`_v3`,
// `_rebuild_parameter`) over storages `NAME/data/KEY`. Any other callable, such as
// `os.system` or a pickled nn.Module class, is refused with kInvalidInput naming it; the
// memory the pickle builds is bounded by its size (torch_pickle.h).
//
// Tensors are named by their path through the containers, '.'-joined ("model.fc.weight",
// "layers.0.bias"); a top-level tensor takes the file's stem. Contiguous tensors are
// views of the mapped file; others are gathered into row-major order, by read() whole
// and by read_pieces() a piece at a time (a view may repeat a small storage many times).
// Values that are not tensors (an epoch counter, the optimizer's param_groups) are
// listed in TensorReader::skipped(), one entry per subtree without tensors.
#pragma once

#include <memory>
#include <string>

#include "tk/io/tensor_file.h"

namespace tk::io {

class ZipArchive;

// Whether `archive` is a torch.save checkpoint (true) or an .npz (false), told by its
// entries: a checkpoint holds `NAME/data.pkl` and no .npy entry outside `NAME/`; an
// .npz holds .npy entries and no data.pkl, or no entries at all. Throws kInvalidInput
// for an archive that holds both, or neither.
bool torch_is_archive(const ZipArchive& archive);

// Read the checkpoint in `archive`; `name` names it in errors, `stem` names a tensor
// saved on its own.
std::unique_ptr<TensorReader> torch_open(std::shared_ptr<const ZipArchive> archive, const std::string& name,
                                         const std::string& stem);

// The message for a file in the legacy (pre-1.6) torch.save format or a bare pickle,
// which begins with the pickle protocol opcode.
std::string torch_legacy_message();

}  // namespace tk::io
