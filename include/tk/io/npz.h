// NumPy .npz archives, as np.savez and np.savez_compressed write them: a zip holding one
// .npy file per array, NAME.npy for the array NAME. Reading takes stored and deflated
// entries (entries that are not .npy files are listed in skipped()); stored arrays are
// views of the mapped file, deflated ones are inflated whole by read() and a piece at
// a time by read_pieces() (row-major little-endian arrays). Writing stores every tensor uncompressed, each array's data
// at a multiple of 64 bytes of the file, with the dtypes .npy can hold; np.load reads it.
#pragma once

#include <memory>
#include <string>

#include "tk/io/tensor_file.h"

namespace tk::io {

class ZipArchive;

std::unique_ptr<TensorReader> npz_open(std::shared_ptr<const ZipArchive> archive, const std::string& name);

// Metadata has no place in .npz and is not written.
std::unique_ptr<TensorWriter> npz_writer(std::unique_ptr<OutputStream> out);

}  // namespace tk::io
