# --json reports sizes, ratio, speed and the original's digest: XXH3-128 (what xxh128sum
# prints) by default, SHA-256 (what sha256sum prints) with --sha256; -d and -l report
# the same digest under the same key.
tcompress -q --container "$TD/tiny.safetensors" -o t.tkz --json r.json
tcompress -q --sha256 "$TD/tiny.safetensors" -o s.tkz --json s.json
tcompress -q -d t.tkz -o t.out --json rt.json
tcompress -q -d s.tkz -o s.out --json rs.json
tcompress -l s.tkz --json ls.json >/dev/null
xxh=$(xxh128sum "$TD/tiny.safetensors" | cut -d' ' -f1)
sha=$(sha256sum "$TD/tiny.safetensors" | cut -d' ' -f1)
"$PY" -c "
import json
r, s, rt, rs, ls = (json.load(open(n)) for n in ('r.json', 's.json', 'rt.json', 'rs.json', 'ls.json'))
print(r['source'], r['bytes_in'], r['xxh3_128'] == '$xxh', rt['xxh3_128'] == '$xxh')
print(s['sha256'] == '$sha', rs['sha256'] == '$sha', ls['sha256'] == '$sha')
print(sorted(r))"
tcompress -d s.tkz -o s2.out 2>&1 | grep -o "SHA-256 verified"
tcompress -d t.tkz -o t2.out 2>&1 | grep -o "XXH3-128 verified"
