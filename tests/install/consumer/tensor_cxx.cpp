// Writes a tensor to safetensors and HDF5 with the installed C++ library, reads both back
// and compares the values. Usage: tensor_cxx DIR. Prints one line; exit code 0 when exact.
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "tk/core/error.h"
#include "tk/core/tensor.h"
#include "tk/io/tensor_file.h"

namespace {

// Write `tensor` as "w" into `path` (format from the extension) and read it back.
tk::Tensor round_trip(const std::string& path, const tk::Tensor& tensor) {
  auto writer = tk::io::open_writer(path);
  tk::io::TensorInfo info{"w", tensor.dtype(), tensor.shape(), tensor.nbytes()};
  writer->begin({info}, {});
  writer->write(0, tensor);
  writer->finish();
  auto reader = tk::io::open_reader(path);
  auto index = reader->find("w");
  if (!index) throw std::runtime_error(path + ": no tensor w");
  return reader->read(*index);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tensor_cxx DIR\n");
    return 2;
  }
  try {
    tk::Tensor tensor = tk::Tensor::empty(tk::DType::kF32, {2, 3});
    float* values = tensor.mutable_data_as<float>();
    for (int i = 0; i < 6; ++i) values[i] = 0.5f * static_cast<float>(i) - 1.0f;
    const std::string dir = argv[1];
    for (const char* name : {"/w.safetensors", "/w.h5"}) {
      tk::Tensor back = round_trip(dir + name, tensor);
      if (back.shape() != tensor.shape() || back.nbytes() != tensor.nbytes() ||
          std::memcmp(back.data(), tensor.data(), tensor.nbytes()) != 0) {
        std::fprintf(stderr, "tensor_cxx: %s differs after the round trip\n", name);
        return 1;
      }
    }
    std::printf("tensorkit %s: safetensors and hdf5 round trips exact\n", TK_VERSION);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensor_cxx: %s\n", e.what());
    return 1;
  }
  return 0;
}
