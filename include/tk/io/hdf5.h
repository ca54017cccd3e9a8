// HDF5 through the C API: one dataset per tensor, '/'-separated names as groups,
// metadata as string attributes of the root group, bf16 as a committed float type
// that h5py reads as float32, optional zstd-filtered (id 32015) chunked datasets.
// Types follow h5py: BOOL is its enum, C64 its compound {r, i}; the narrow floats
// (F8_*, F4, F6_*) are uint8 datasets with a string attribute `tk_dtype`, the sub-byte
// ones holding their packed bytes in 1-D plus an int64 attribute `tk_shape`.
// The HDF5 C types never leave lib/tk/io/hdf5*.cpp. HDF5 calls are not made from
// several threads at once: use one reader or writer from one thread at a time.

// Reading: every dataset of a representable type, found recursively, is a tensor named
// by its path without the leading '/'; a dataset hard-linked under several names is a
// tensor under each. Others (strings, references, other compounds, complex128, datasets
// without data, virtual or external storage) and soft, external and user-defined links
// are skipped: listed with the reason in TensorReader::skipped() and, comma-separated,
// under the metadata key "hdf5.skipped". A group reached again through another hard link
// (a cycle) is skipped the same way. Groups nested more than 64 deep are kInvalidInput;
// the walk opens each group relative to its parent, so it is linear in the number of
// links. String and numeric scalar
// attributes of the root group are the metadata; attributes of datasets are not read.
// A malformed file or dataset is kInvalidInput; a dataset needing a filter this process
// lacks (e.g. blosc) is listed and fails with kUnavailable when read.
#pragma once

#include <memory>

#include "tk/io/tensor_file.h"

namespace tk::io {

// Open an HDF5 file from `in`: regular files by path; pipes are copied once into a
// temporary file (its name removed as soon as it is open); memory streams are opened as a
// file image.
std::unique_ptr<TensorReader> hdf5_open(std::unique_ptr<InputStream> in, const ReadOptions& options);

// Write HDF5 to `out`: directly to its temporary file, or built in memory and copied
// to the stream for stdout. HDF5 names are C strings, so a tensor name, metadata key
// or value holding a NUL is refused with kInvalidInput (naming the tensor it would
// collide with when cut there).
std::unique_ptr<TensorWriter> hdf5_writer(std::unique_ptr<OutputStream> out, const WriteOptions& options);

// Register the zstd filter (id 32015) with the HDF5 library of this process, once.
void hdf5_register_zstd_filter();

}  // namespace tk::io
