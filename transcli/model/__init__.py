"""The Transformer of the paper and its decode-time cache; no data or CLI code."""
