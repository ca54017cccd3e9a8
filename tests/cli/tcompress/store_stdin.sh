# A file read from standard input needs --name; get writes to standard output.
$PY "$(dirname "$0")/store_models.py" m 3
cat m/base.safetensors | tcompress store add --store S - --name models/base -q
tcompress store get --store S models/base | cmp - m/base.safetensors && echo "identical"
cat m/base.safetensors | tcompress store add --store S -
echo "rc $?"
