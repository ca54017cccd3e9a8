# The side-by-side peer suites at CI size, each writing the tbench form (checked like
# tbench's own): safetensors (Python) and the zstd CLI are installed in CI; ZipNN is
# not, and its rows must then be reported as skipped rather than fail the suite.
S="$TK_SRC/scripts/bench"
CHK="$TK_SRC/tests/cli/tbench/check_results.py"
$PY "$S/io_vs_safetensors.py" --small --bin "$TK_BIN" --dir . --json io.json >/dev/null
$PY "$CHK" io.json --area io --expect-status ok=2
$PY "$S/compress_vs_peers.py" --small --bin "$TK_BIN" --tbench-json compress.json >/dev/null
$PY "$CHK" compress.json --area compress | sed -E 's/^(compress zipnn .*): (ok|skipped)$/\1: ok, or skipped without zipnn/'
tbench compare io.json io.json | tail -1
