#include "cli/option_hint.h"

#include <string_view>

namespace tk::cli {

namespace {

enum class Place {
  kAfterMessage,  // appended to the message: "FACT; give it with --base"
  kLocation,      // the innermost location: "FACT (FILE: --noise)"
  kMessage,       // the whole message, where the flag is the sentence's subject
};

struct OptionHint {
  std::string_view key;  // as the library names the case
  Place place;
  std::string_view text;
};

// One entry per key a library message can carry (git grep 'with_option(' lib/).
constexpr OptionHint kHints[] = {
    {"codec.base", Place::kAfterMessage, "; give it with --base"},
    {"codec.record_base", Place::kAfterMessage, " (--base)"},
    {"codec.opaque_restore", Place::kAfterMessage, "; restore it with -d"},
    {"codec.opaque_skipped", Place::kAfterMessage, "; restore it with 'tcompress -d'"},
    {"io.tkz_from_path", Place::kAfterMessage, "; or restore it with 'tcompress -d'"},
    {"io.tkz_output", Place::kAfterMessage, "; use tcompress"},
    {"io.zstd_frame", Place::kAfterMessage, "; restore the file inside with 'tcompress -d' or 'zstd -d'"},
    {"io.checkpoint_output", Place::kMessage, "checkpoint steps are written by 'tckpt save'"},
    {"io.shard_index_output", Place::kAfterMessage, " with --max-shard-size"},
    {"io.output_exists", Place::kAfterMessage, "; use -f to overwrite"},
    {"io.npy_one_tensor", Place::kAfterMessage, "; select one with -t"},
    {"io.npy_dtype", Place::kAfterMessage, "; convert it with --dtype f32"},
    {"io.gguf_dtype", Place::kAfterMessage, "; convert it with --dtype, or quantize it with tquant"},
    {"io.gguf_transfer_dtype", Place::kAfterMessage, "; give --dtype, or quantize with tquant"},
    {"io.gguf_name_length", Place::kAfterMessage, "; rename it with --rename"},
    {"device.cpu", Place::kAfterMessage, "; --device cpu or auto runs it on the CPU"},
    {"decomp.budget", Place::kLocation, "--budget"},
    {"decomp.rank_range", Place::kLocation, "--range"},
    {"decomp.realisations", Place::kLocation, "--realisations"},
    {"decomp.noise", Place::kLocation, "--noise"},
    {"decomp.rescal_nonneg", Place::kMessage, "rescal: --nonneg needs a tensor without negative values"},
    {"quant.ct_output_directory", Place::kAfterMessage, "; give -o DIR"},
    {"store.replace", Place::kAfterMessage, "; give --replace to replace it"},
    {"store.name", Place::kAfterMessage, " (--name)"},
};

const OptionHint* hint_for(std::string_view key) {
  if (key.empty()) return nullptr;
  for (const OptionHint& h : kHints)
    if (h.key == key) return &h;
  return nullptr;
}

}  // namespace

ErrorText error_text(const Error& e) {
  ErrorText t{e.message(), e.where()};
  const OptionHint* h = hint_for(e.option());
  if (h == nullptr) return t;
  switch (h->place) {
    case Place::kAfterMessage: t.message += h->text; break;
    case Place::kLocation: t.where = t.where.empty() ? std::string(h->text) : t.where + ": " + std::string(h->text); break;
    case Place::kMessage: t.message = h->text; break;
  }
  return t;
}

bool has_option_hint(std::string_view key) { return hint_for(key) != nullptr; }

std::string skipped_reason_text(const std::string& reason, const std::string& option) {
  return error_text(Error(ErrorKind::kInvalidInput, reason).with_option(option)).message;
}

}  // namespace tk::cli
