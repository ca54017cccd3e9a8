# An output name that is a symbolic link is never written through, -f or not: a link to
# a device (here /dev/null standing in for a disk) or to a file elsewhere is refused with
# exit 2 before anything is read, and what it points at is untouched.
mkdir out
ln -s /dev/null out/model.safetensors
echo keep > elsewhere.txt
ln -s ../elsewhere.txt out/other.safetensors
tconvert "$TD/tiny.safetensors" -o out/model.safetensors; echo "link to a device: rc=$?"
tconvert "$TD/tiny.safetensors" -o out/model.safetensors -f; echo "with -f: rc=$?"
tconvert "$TD/tiny.safetensors" -o out/other.safetensors -f; echo "link to a file: rc=$?"
cat elsewhere.txt
ls -A out | sort
ln -s /dev/null out/report.json
tinfo "$TD/tiny.safetensors" --json out/report.json; echo "--json through a link: rc=$?"
# Named directly, a character device is written as a stream, and so is what the
# process's own descriptor names lead to (/dev/stdout, process substitution).
tconvert -q --no-provenance "$TD/tiny.safetensors" -o ref.safetensors
tconvert -q "$TD/tiny.safetensors" -o /dev/null; echo "/dev/null: rc=$?"
tconvert -q --no-provenance "$TD/tiny.safetensors" -o /dev/stdout | cmp -s - ref.safetensors; echo "/dev/stdout into a pipe: rc=$?"
tconvert -q --no-provenance "$TD/tiny.safetensors" -o >(cat > sub.safetensors); echo "process substitution: rc=$?"
tconvert -q --no-provenance "$TD/tiny.safetensors" -o /dev/stdout > redirected.safetensors; echo "/dev/stdout into a file: rc=$?"
cmp redirected.safetensors ref.safetensors && echo "same bytes"
for i in 1 2 3 4 5 6 7 8 9 10; do cmp -s sub.safetensors ref.safetensors && break; sleep 0.2; done
cmp sub.safetensors ref.safetensors && echo "same bytes"
