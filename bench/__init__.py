"""Benchmarks: our loop beside the peer frameworks, measured side by side in one run. Run from the checkout
root as modules, e.g. `python -m bench.run` (bench/README.md)."""
