tbench compress --methods lossless,zip
