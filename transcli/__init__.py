"""transcli: train and run an English-to-Spanish Transformer from the command line."""

__version__ = "0.2.0"
