"""The YAML configuration: typed sections, loading and validation, the key list."""
