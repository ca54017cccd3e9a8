# An empty --name is a usage error, not the file name.
$PY "$(dirname "$0")/store_models.py" m 1
tcompress store add --store S --name '' m/base.safetensors
