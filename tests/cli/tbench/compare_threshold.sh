echo '{"schema": "tensorkit.tbench/1", "results": []}' > v1.json
tbench compare v1.json v1.json --threshold fast
