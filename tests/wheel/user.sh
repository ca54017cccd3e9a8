#!/usr/bin/env bash
# The user's side of run.sh, as the non-root test user. WORK holds pkgs/ (the wheel and
# numpy), run/ (a scratch folder) and quickstart.sh.
#   sandbox: make a venv, pip install offline, check where every library of the tools and
#            the extension module resolves, run each tool's --version, the quick start, a
#            tensorkit.ckpt save and restore, and --video without libavcodec (exit 5).
#   system:  --video again, with the system's libraries: it works when libavcodec is there.
set -euo pipefail
work=$1 mode=$2
venv=$work/venv
tools="tinfo tconvert tdecomp tquant tcompress tckpt tbench"
fail() {
  echo "wheel test ($mode): $*" >&2
  exit 1
}
cd "$work/run"

if [ "$mode" = system ]; then
  . "$venv/bin/activate"
  if ! ls /usr/lib/*/libavcodec.so.* >/dev/null 2>&1; then
    echo "no libavcodec on this system: --video with it not checked"
    exit 0
  fi
  tcompress w.safetensors --video hevc --crf 20 -o v.tkz 2>err || { cat err; fail "--video with libavcodec failed"; }
  grep -q "1 lossy" err || { cat err; fail "--video coded no tensor"; }
  tcompress -d v.tkz -o v.safetensors
  echo "tcompress --video: the system's libavcodec is found"
  exit 0
fi

[ "$(id -u)" -ne 0 ] || fail "running as root"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$work/pkgs" tensorkit numpy
. "$venv/bin/activate"

# Where each library resolves: inside the venv (what auditwheel put in the wheel), or one
# of the libraries every manylinux system has (the C and C++ run-times, libz, libexpat).
site=$(python -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
binaries=("$site"/tensorkit/_ckpt*.so)
for t in $tools; do
  [ "$(command -v "$t")" = "$venv/bin/$t" ] || fail "$t is not the venv's: $(command -v "$t")"
  binaries+=("$site/tensorkit.scripts/$t")
done
for b in "${binaries[@]}"; do
  [ -f "$b" ] || fail "missing: $b"
  out=$(ldd "$b") || fail "ldd $b failed"
  ! grep -q "not found" <<<"$out" || { echo "$out"; fail "$(basename "$b"): a library is not found"; }
  outside=$(awk -v venv="$venv/" '$2 == "=>" && $3 ~ /^\// && index($3, venv) != 1 { print $1 }' <<<"$out" |
    grep -Ev '^(libc|libm|libmvec|libdl|librt|libpthread|libutil|libresolv|libanl|libnsl|libatomic|libstdc\+\+|libgcc_s|libz|libexpat)\.so\.' || true)
  [ -z "$outside" ] || fail "$(basename "$b") loads from the system: $outside"
done
echo "libraries: ${#binaries[@]} binaries take all but the manylinux system libraries from the wheel"

for t in $tools; do
  v=$($t --version) || fail "$t --version failed"
  echo "$(head -1 <<<"$v")"
done
tinfo --version | grep -q "features: .*hdf5" || fail "tinfo --version names no hdf5"
for t in $tools; do
  [ -f "$venv/share/man/man1/$t.1" ] || fail "no man page $venv/share/man/man1/$t.1"
done

# A model for the quick start: a float matrix large enough for every tool to work on.
python - <<'PY'
import numpy as np
rng = np.random.default_rng(0)
np.save("w.npy", rng.normal(0, 0.02, (256, 256)).astype(np.float32))
PY
tconvert w.npy -o w.safetensors
cp w.safetensors model.safetensors
bash -e "$work/quickstart.sh" >quickstart.log 2>&1 || { cat quickstart.log; fail "the README's quick start failed"; }
echo "quick start: $(grep -c . "$work/quickstart.sh") commands ran"

python - <<'PY'
import numpy as np
import tensorkit
import tensorkit.ckpt

w = np.arange(12, dtype=np.float32).reshape(3, 4)
with tensorkit.ckpt.Checkpointer("py-ckpt", keep_last=2) as ck:
    ck.save(7, {"w": w, "nested": {"b": np.ones(5, dtype=np.int64)}}).wait()
with tensorkit.ckpt.Checkpointer("py-ckpt", read_only=True) as ck:
    back = {"w": np.zeros_like(w), "nested": {"b": np.zeros(5, dtype=np.int64)}}
    assert ck.restore(back) == 7
    assert (back["w"] == w).all() and (back["nested"]["b"] == 1).all()
    assert ck.verify().ok
    try:
        ck.restore({"w": np.zeros((4, 3), dtype=np.float32)})
        raise SystemExit("a restore into a wrong shape passed")
    except tensorkit.UsageError:
        pass
print("tensorkit.ckpt: save and restore of numpy arrays")
PY
tckpt verify py-ckpt >/dev/null || fail "tckpt verify of the Python checkpoint failed"

# No libavcodec here: --video says so, exit 5, one line.
rc=0
tcompress w.safetensors --video hevc --crf 20 -o v.tkz 2>err || rc=$?
[ "$rc" -eq 5 ] || { cat err; fail "--video without libavcodec: exit $rc, not 5"; }
grep -Eq '^tcompress: error: video codecs need libav(util|codec)\.so\.[0-9]+, which cannot be loaded' err ||
  { cat err; fail "--video without libavcodec: unexpected message"; }
[ "$(wc -l <err)" -eq 1 ] || { cat err; fail "--video without libavcodec: more than one line"; }
echo "tcompress --video without libavcodec: exit 5, $(cut -c1-60 err)..."
