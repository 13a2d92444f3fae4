"""Benchmarks that print figures: run each from the repository root as
`python -m bench.NAME` (model_speed, train_speed, translate_speed, prepare_speed,
quality, gpu_check, study); `python -m bench.micro` holds the smaller ones."""
