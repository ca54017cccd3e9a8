// TK_HD marks a function that CUDA code calls on the device as well as the CPU on the
// host: one source for both, so that a GPU path computes what its CPU reference does,
// operation for operation (nvcc runs with --fmad=false, see CMakeLists.txt).
#pragma once

#if defined(__CUDACC__)
#define TK_HD __host__ __device__
#else
#define TK_HD
#endif
