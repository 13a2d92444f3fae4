"""Benchmarks that print figures: run each from the repository root as
`python -m bench.<name>` (model_speed, train_speed, translate_speed, prepare_speed,
quality, serve_load, gpu_check); what they share is in common.py, flops.py and
reference.py. The research studies behind the recipes and decisions are in studies/."""
