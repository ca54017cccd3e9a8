# A rename that makes two names equal is refused.
tconvert "$TD/tiny.safetensors" --rename "*.weight=w" -o r.safetensors
