tbench compress --methods lossless --params bits=4
