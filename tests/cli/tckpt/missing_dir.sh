tckpt ls nowhere
