# Files without tensors (JSON and text of 0 B to 100 KB, a config.json and a
# tokenizer.json-like vocabulary) and a tiny safetensors file (one 4x4 f32 tensor):
# tcompress's output is never larger than `zstd -3`'s, from a file or a pipe, and
# `tcompress -d` restores each bit for bit.
: > empty.txt
printf 'x' > one.txt
printf '{"a": 1, "model_type": "bert", "hidden_size": 384, "vocab_size": 30522}\n' > small.json
"$PY" -c "
import json
config = {'architectures': ['BertModel'], 'attention_probs_dropout_prob': 0.1, 'hidden_act': 'gelu',
          'hidden_size': 384, 'initializer_range': 0.02, 'intermediate_size': 1536, 'layer_norm_eps': 1e-12,
          'max_position_embeddings': 512, 'model_type': 'bert', 'num_attention_heads': 12,
          'num_hidden_layers': 6, 'pad_token_id': 0, 'position_embedding_type': 'absolute',
          'torch_dtype': 'float32', 'transformers_version': '4.8.2', 'type_vocab_size': 2,
          'use_cache': True, 'vocab_size': 30522}
json.dump(config, open('config.json', 'w'), indent=2)
vocab = {'##' * (i % 3 == 0) + 'tok' + format(i * 2654435761 % 99991, 'x'): i for i in range(12000)}
text = json.dumps({'version': '1.0', 'model': {'type': 'WordPiece', 'vocab': vocab}}, indent=2)
open('tokenizer.json', 'w').write(text)
for n in (1024, 10240, 102400):
    open('text%d.json' % n, 'w').write(text[:n])
import numpy as np
from safetensors.numpy import save_file
save_file({'w': np.arange(16, dtype=np.float32).reshape(4, 4)}, 'tiny.safetensors')
"
for f in empty.txt one.txt small.json config.json text1024.json text10240.json text102400.json tokenizer.json \
         tiny.safetensors; do
  tcompress -q "$f" -o "$f.tkz"
  cat "$f" | tcompress -q - -o "$f.pipe.tkz"
  tcompress -q -d "$f.tkz" -o "$f.back"
  tcompress -q -d - -o "$f.pipe.back" < "$f.pipe.tkz"
  ours=$(stat -c %s "$f.tkz") pipe=$(stat -c %s "$f.pipe.tkz")
  zstd3=$(zstd -3 -c "$f" | wc -c) zstd3_pipe=$(cat "$f" | zstd -3 -c | wc -c)
  verdict=larger
  [ "$ours" -le "$zstd3" ] && [ "$pipe" -le "$zstd3_pipe" ] && verdict="no larger than zstd -3"
  cmp -s "$f" "$f.back" && cmp -s "$f" "$f.pipe.back" && echo "$f: $(stat -c %s "$f") B, $verdict, restored"
done
# A compact file lists as one frame, and holds no tensor to extract (exit 2, a hint).
tcompress -l config.json.tkz
tcompress -l --json - tiny.safetensors.tkz | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
print(d['zstd_frame'], d['original_bytes'], d['container_bytes'] == $(stat -c %s tiny.safetensors.tkz), d['records'])"
tcompress -d -t w tiny.safetensors.tkz -o w.safetensors 2>&1; echo "rc=$?"
tcompress -d -t 'w*' tiny.safetensors.tkz -o w.safetensors 2>&1; echo "rc=$?"
