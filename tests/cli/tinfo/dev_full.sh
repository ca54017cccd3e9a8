# A report that cannot be written (full disk) is an I/O error, exit 4.
tinfo "$TD/tiny.safetensors" > /dev/full
