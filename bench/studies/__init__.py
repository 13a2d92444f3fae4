"""Research studies, which the shipped recipes came from, kept to re-run them: the recipe
study (`python -m bench.studies.recipes`). Retired ones: docs/BENCHMARKS.md cites their
figures and the revision that has them."""
