"""Research studies, which the shipped recipes came from, kept to re-run them: the recipe
studies (`python -m bench.studies.cpu_recipes`, `...gpu_recipes`). The micro-benchmarks
behind earlier decisions are retired: docs/BENCHMARKS.md cites their figures and the
revision that has them."""
