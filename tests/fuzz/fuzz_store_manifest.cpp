// libFuzzer target for the store manifest parser (lib/tk/store/manifest.cpp).
// Each input is a manifest; one that is accepted must serialise and parse again to the
// same segments. tk::Error of kind invalid input is the only way to refuse one.
#include <cstdint>
#include <cstdlib>

#include "tk/store/manifest.h"
#include "tk/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tk::store::StoreManifest m;
  try {
    m = tk::store::store_manifest_parse({data, size}, "fuzz");
  } catch (const tk::Error& e) {
    if (e.kind() != tk::ErrorKind::kInvalidInput) std::abort();
    return 0;
  }
  auto text = tk::store::store_manifest_serialize(m);
  tk::store::StoreManifest again = tk::store::store_manifest_parse(text, "again");
  if (again.name != m.name || again.size != m.size || again.sha256 != m.sha256 ||
      again.segments.size() != m.segments.size())
    std::abort();
  for (size_t i = 0; i < m.segments.size(); ++i)
    if (again.segments[i].offset != m.segments[i].offset || again.segments[i].key != m.segments[i].key ||
        again.segments[i].tensor != m.segments[i].tensor)
      std::abort();
  return 0;
}
