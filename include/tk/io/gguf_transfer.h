// Transfers into GGUF (tconvert to .gguf): the io::transfer of transfer.h for a GGUF
// writer, keeping what a GGUF input stores as it is.
#pragma once

#include "tk/io/gguf.h"
#include "tk/io/transfer.h"

namespace tk::io {

// Copy `items` into `writer` in item order (each source's items must be in its storage
// order when it is read sequentially) and finish it. A tensor of a GGUF source that is
// not cast keeps its ggml type and stored bytes, blocks included; every other tensor is
// read (block types decoded to F32), cast when its item says so, and written plain;
// tensors llama.cpp reads only as F32 are written as F32 (gguf_keep_f32_items).
// The output's pairs are gguf_output_kvs of the first GGUF source. Throws kUsage for a
// dtype that GGUF cannot hold, and what the readers and the writer throw.
TransferResult gguf_transfer(const std::vector<TransferSource>& sources, const std::vector<TransferItem>& items,
                             GgufWriter& writer, const Metadata& metadata, const TransferOptions& options = {});

// The pairs of an output made from `source` (a GGUF input, or null) whose metadata is now
// `metadata`: the source's pairs (without a source, those carried under kGgufPairsKey,
// see gguf_kv_json.h), as stored, where `metadata` still has them with the same text (a
// changed text is written as a string, a missing key is left out), then the other keys
// of `metadata` as strings, but `general.*` (typed by GGUF), "format" and
// kGgufPairsKey. A general.alignment above kGgufMaxAlignment is left out (the output
// takes the default). Throws kInvalidInput for a malformed kGgufPairsKey value.
std::vector<GgufKv> gguf_output_kvs(const GgufReader* source, const Metadata& metadata);

// Make every item whose output llama.cpp reads only as F32 (gguf_keeps_f32: norms,
// biases, ...) a cast to F32, whatever it was cast to or stored as; the other items are
// left alone. gguf_transfer does this itself; a caller that reports the output's dtypes
// calls it first.
void gguf_keep_f32_items(const std::vector<TransferSource>& sources, std::vector<TransferItem>& items);

// Keep the typed pairs of `reader`, when it is a GGUF file, in `metadata` under
// kGgufPairsKey (unless that key is set), for an output whose metadata holds strings.
void gguf_keep_pairs(const TensorReader& reader, Metadata& metadata);

// Whether any source is a GGUF file (whose pairs would reach the output).
bool gguf_transfer_has_model_metadata(const std::vector<TransferSource>& sources);

}  // namespace tk::io
