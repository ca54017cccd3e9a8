#!/usr/bin/env bash
# llama.cpp runs what tconvert and tquant write: the f16 cast of a real decoder LLM, a
# --size allocation at the bytes of llama-quantize's Q4_K_M, a k-quant, and a trip
# through safetensors and back. Each file goes through llama-perplexity against the f16
# file's logits on two chunks of text; the test fails when llama.cpp refuses a file, when
# a file's KL divergence passes its bound, or when tquant's file at Q4_K_M's size is
# further from f16 than Q4_K_M's. Usage: run.sh BUILD WORK (WORK as scripts/bench/tquant_llm_ppl.py leaves it).
set -euo pipefail
build=$1
work=${TK_LLAMA_WORK:-$2}
bin=$work/llama-build/bin
model=$work/SmolLM2-135M-Instruct.Q4_1.gguf
text=$work/genesis.txt
for f in "$bin/llama-perplexity" "$bin/llama-quantize" "$model" "$text"; do
  if [ ! -e "$f" ]; then
    echo "skipped: no $(basename "$f") in $work (scripts/bench/tquant_llm_ppl.py makes it)"
    exit 77
  fi
done
tmp=$(mktemp -d "${TK_TEST_TMP:-/tmp}/llama.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
head -c 20000 "$text" > text.txt

ppl() {  # ppl FILE [BASE-ARGS]: llama-perplexity on two chunks of 256 tokens
  "$bin/llama-perplexity" -m "$1" -f text.txt -c 256 --chunks 2 -t 2 "${@:2}" > "$1.log" 2>&1 || {
    echo "llama-perplexity refused $1:"; tail -5 "$1.log"; exit 1; }
}
kld() { sed -n 's/^Mean    KLD: *\([-0-9.]*\).*/\1/p' "$1.log"; }

"$build/tconvert" "$model" --dtype f16 -o f16.gguf
ppl f16.gguf --kl-divergence-base base.kld
"$bin/llama-quantize" --allow-requantize f16.gguf q4_k_m.gguf Q4_K_M 2 > q4_k_m.quantize.log 2>&1
"$build/tquant" -q f16.gguf --size "$(stat -c %s q4_k_m.gguf)" -o size.gguf
"$build/tquant" -q f16.gguf --scheme q4k -o q4k.gguf 2> /dev/null
"$build/tconvert" f16.gguf -o f16.safetensors
"$build/tconvert" f16.safetensors -o back.gguf
"$build/tquant" -q f16.safetensors --budget 5 -o from_st.gguf
fail=0
# file, bound on the mean KL divergence (nats per token) to the f16 logits
for case in "back.gguf 0.0001" "q4_k_m.gguf 1" "size.gguf 1" "q4k.gguf 1" "from_st.gguf 1"; do
  set -- $case
  ppl "$1" --kl-divergence-base base.kld --kl-divergence
  k=$(kld "$1")
  echo "$1: mean KLD $k (bound $2)"
  awk -v k="$k" -v b="$2" 'BEGIN { exit !(k != "" && k + 0 <= b + 0) }' || { echo "FAIL: $1"; fail=1; }
done
ref=$(kld q4_k_m.gguf) ours=$(kld size.gguf)
echo "at Q4_K_M's $(stat -c %s q4_k_m.gguf) bytes: tquant $(stat -c %s size.gguf) bytes, KLD $ours; llama-quantize $ref"
awk -v a="$ours" -v b="$ref" 'BEGIN { exit !(a + 0 <= b + 0) }' || { echo "FAIL: tquant's file is further from f16"; fail=1; }
exit $fail
