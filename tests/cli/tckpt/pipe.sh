# Steps come from and go to pipes: HDF5 in through tconvert, tinfo on the way out.
tconvert -q "$TD/field.h5" -o - | tckpt save ck - -q
tconvert -q "$TD/tiny.safetensors" -o - | tckpt save ck - -q
tckpt ls ck | awk '{print $1, $3, $(NF-1), $NF}'
tckpt restore -q ck --step 0 -o - | tinfo - | head -3
