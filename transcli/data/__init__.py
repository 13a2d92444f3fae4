"""From raw parallel text to encoded splits, and the batches training reads."""
