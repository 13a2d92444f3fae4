"""Benchmarks that print figures: run each from the repository root as
`python -m bench.<name>` (model_speed, train_speed, translate_speed, prepare_speed,
quality, serve_load, gpu_check, padding, launches); what they share is in common.py,
flops.py and reference.py, and gpu_check's stages are in gpu_bench.py, gpu_table.py and
gpu_profile.py. The research studies behind the recipes and decisions are in studies/."""
