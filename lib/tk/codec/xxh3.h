// XXH3 at the widest vectors the machine has, for long streams from memory (a file's
// digest). The build targets x86-64-v2 (no AVX2), so XXH3 compiled into the toolkit
// runs on SSE2; libxxhash's dispatching entry points pick AVX2 or AVX-512 at run time:
// 1 GiB in 1 MiB updates at 30 GB/s against 18 on an AVX-512 machine. Not for data
// already in cache (the lossless frame's chunks): there the inline SSE2 code ran the
// codec faster. The names XXH3_64bits, XXH3_128bits_update, ... are redirected to the
// dispatching ones on x86-64; elsewhere they are the library's own.
#pragma once

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif
