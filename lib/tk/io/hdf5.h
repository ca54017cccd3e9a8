// HDF5 through the C API: one dataset per tensor, '/'-separated names as groups,
// metadata as string attributes of the root group, bf16 as a committed float type
// that h5py reads as float32, optional zstd-filtered (id 32015) chunked datasets.
// The HDF5 C types never leave hdf5.cpp.
#pragma once

#include <memory>

#include "tk/io/tensor_file.h"

namespace tk::io {

// Open an HDF5 file from `in`: regular files by path, other streams (pipes) are read
// into memory and opened as a file image.
std::unique_ptr<TensorReader> hdf5_open(std::unique_ptr<InputStream> in, const ReadOptions& options);

// Write HDF5 to `out`: directly to its temporary file, or built in memory and copied
// to the stream for stdout.
std::unique_ptr<TensorWriter> hdf5_writer(std::unique_ptr<OutputStream> out, const WriteOptions& options);

// Register the zstd filter (id 32015) with the HDF5 library of this process, once.
void hdf5_register_zstd_filter();

}  // namespace tk::io
