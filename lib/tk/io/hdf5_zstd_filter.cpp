// The zstd filter (registered id 32015), wire-compatible with hdf5plugin's Zstd filter:
// each chunk is one zstd frame with its content size (and, from us, a checksum)
// recorded; cd_values[0] is the compression level.
#include <zstd.h>

#include <cstring>
#include <memory>
#include <mutex>

#include "tk/io/hdf5.h"
#include "tk/io/hdf5_types.h"

namespace tk::io {

namespace {

constexpr H5Z_filter_t kZstdFilterId = 32015;
constexpr int kDefaultLevel = 3;
// HDF5 chunks are at most 4 GiB; a zstd block of 128 KiB shrinks to no less than 4 bytes,
// so no valid frame expands more than 32768 times (plus its header).
constexpr uint64_t kMaxChunkBytes = uint64_t(1) << 32;
constexpr uint64_t kMaxExpansion = 32768;

// Replace the chunk in *buf with `out` (of `out_size` valid bytes, allocated `out_alloc`).
size_t hand_back(void** buf, size_t* buf_size, void* out, size_t out_size, size_t out_alloc) {
  H5free_memory(*buf);
  *buf = out;
  *buf_size = out_alloc;
  return out_size;
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

size_t zstd_compress_chunk(size_t cd_nelmts, const unsigned int cd_values[], size_t nbytes, size_t* buf_size,
                           void** buf) {
  int level = cd_nelmts > 0 ? static_cast<int>(cd_values[0]) : kDefaultLevel;
  if (level < 1) level = kDefaultLevel;
  if (level > ZSTD_maxCLevel()) level = ZSTD_maxCLevel();
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
  if (!cctx) return 0;
  ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_and_parameters);
  // The frame records its content size (which readers such as hdf5plugin rely on) and
  // a checksum, so that a corrupt chunk fails instead of decoding to wrong values.
  if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1)))
    return 0;
  size_t bound = ZSTD_compressBound(nbytes);
  if (ZSTD_isError(bound)) return 0;
  void* out = H5allocate_memory(bound, false);
  if (!out) return 0;
  size_t n = ZSTD_compress2(cctx.get(), out, bound, *buf, nbytes);
  // Incompressible: fail, so that HDF5 stores the chunk as it is (the filter is optional).
  if (ZSTD_isError(n) || n >= nbytes) {
    H5free_memory(out);
    return 0;
  }
  return hand_back(buf, buf_size, out, n, bound);
}

size_t zstd_decompress_chunk(size_t nbytes, size_t* buf_size, void** buf) {
  unsigned long long content = ZSTD_getFrameContentSize(*buf, nbytes);
  if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR) return 0;
  if (content > kMaxChunkBytes || content > nbytes * kMaxExpansion + 1024) return 0;
  // A zero-byte chunk cannot exist; refuse rather than allocate nothing.
  if (content == 0) return 0;
  void* out = H5allocate_memory(content, false);
  if (!out) return 0;
  size_t n = ZSTD_decompress(out, content, *buf, nbytes);
  if (ZSTD_isError(n) || n != content) {
    H5free_memory(out);
    return 0;
  }
  return hand_back(buf, buf_size, out, n, content);
}

// HDF5 filter callback: returns the new data size, or 0 on failure (HDF5 then reports
// an error, or stores an optional filter's chunk unfiltered).
size_t zstd_filter(unsigned int flags, size_t cd_nelmts, const unsigned int cd_values[], size_t nbytes,
                   size_t* buf_size, void** buf) {
  if (flags & H5Z_FLAG_REVERSE) return zstd_decompress_chunk(nbytes, buf_size, buf);
  return zstd_compress_chunk(cd_nelmts, cd_values, nbytes, buf_size, buf);
}

}  // namespace

void hdf5_register_zstd_filter() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    static const H5Z_class2_t kZstdClass = {
        H5Z_CLASS_T_VERS, kZstdFilterId, 1, 1, "zstd", nullptr, nullptr, zstd_filter,
    };
    if (H5Zregister(&kZstdClass) < 0) throw hdf5::error(ErrorKind::kInternal, "cannot register the zstd filter", {});
  });
}

}  // namespace tk::io
