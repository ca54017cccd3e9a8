# Binary data are not written to a terminal: run under a pseudo-terminal with `script`
# (util-linux), whose -e passes the exit status on.
script -qec "tconvert \"$TD/tiny.safetensors\"" /dev/null | tr -d '\r'
