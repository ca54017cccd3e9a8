# Results of another schema version are refused with exit 3 naming both versions.
echo '{"schema": "tensorkit.tbench/2", "results": []}' > v2.json
echo '{"schema": "tensorkit.tbench/1", "results": []}' > v1.json
tbench compare v1.json v2.json
