# Reading from a store that does not exist is an I/O error naming it.
tcompress store get --store nowhere model.safetensors -o out.safetensors
