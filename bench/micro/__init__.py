"""Micro-benchmarks behind decisions already taken (kept to re-check them on other
machines): `python -m bench.micro NAME [options]`, NAME one of `BENCHMARKS`."""

BENCHMARKS = {
    "attention": "torch's CPU attention kernels, math vs flash, by sentence length",
    "drop": "dropping finished rows from the decoder's cache: select vs fill",
    "step": "one cached decoding step per CPU product path (F.linear, BLAS, oneDNN)",
    "topk": "search's pick from [rows, vocab] log-probs: selection.top_k vs torch.topk",
    "int8-speed": "--int8 with its output layer in int8 vs float32, taking turns",
    "int8-accuracy": "NLL per reference token of the torch engine's int8 variants",
    "memory": "peak RSS of one translation process chunk after chunk, BLAS vs oneDNN",
}
