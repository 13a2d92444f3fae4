"""Research studies, which the shipped recipes and decisions came from, kept to re-run
them: the recipe studies (`python -m bench.studies.cpu_recipes`, `...gpu_recipes`) and
the micro-benchmarks (`python -m bench.studies.micro NAME`)."""
