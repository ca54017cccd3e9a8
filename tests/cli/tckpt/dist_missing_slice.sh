# A distributed step whose manifest lacks a slice of "w" is refused by name: the
# tensor, how much is covered and an index no saved slice covers.
tk_dckpt_fixture ck 1 3 --gap
tckpt restore ck -o out.safetensors
