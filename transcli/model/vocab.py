"""The special token ids every part of transcli agrees on.

They are fixed when the sentencepiece model is trained (`tokenizer.py`), so the
model, batching and search use these constants instead of asking a tokenizer:
this module imports nothing, and the model does not depend on sentencepiece.
"""

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3
