// libFuzzer target for the checkpoint manifest parser (lib/tk/ckpt/manifest.cpp). Each
// input is a manifest.json. A manifest that is accepted must encode and decode again to
// the same step; tk::Error of kind invalid input is the only way to refuse one.
#include <cstdint>
#include <cstdlib>

#include "tk/ckpt/manifest.h"
#include "tk/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tk::ckpt::Manifest m;
  try {
    m = tk::ckpt::manifest_decode({data, size}, "fuzz");
  } catch (const tk::Error& e) {
    if (e.kind() != tk::ErrorKind::kInvalidInput) std::abort();
    return 0;
  }
  tk::ckpt::Manifest again = tk::ckpt::manifest_decode(tk::ckpt::manifest_encode(m), "again");
  const tk::ckpt::StepInfo &a = m.info, &b = again.info;
  if (a.step != b.step || a.parent != b.parent || a.metadata != b.metadata || a.entries.size() != b.entries.size() ||
      a.logical_bytes != b.logical_bytes || m.shards.size() != again.shards.size())
    std::abort();
  return 0;
}
