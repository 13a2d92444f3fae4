"""Benchmarks that print figures: run each from the repository root as
`python -m bench.<name>` (train_speed, translate_speed, quality, serve_load, gpu_check;
for the translator's side documents, language_id, page_latency);
what they share is in common.py and flops.py. gpu_check runs the others as child
processes. The recipe study behind the recipes is in studies/."""
