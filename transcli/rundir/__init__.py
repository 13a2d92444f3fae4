"""The run directory: its layout, checkpoints, metrics log and what `info` reads."""
