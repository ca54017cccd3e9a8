tbench ckpt --params compression=zstd
