"""`python -m bench.studies.micro NAME [options]`: run one micro-benchmark (`--help` lists
them)."""

from __future__ import annotations

import importlib
import sys

from bench.studies.micro import BENCHMARKS


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in BENCHMARKS:
        width = max(map(len, BENCHMARKS))
        print("usage: python -m bench.studies.micro NAME [options]\n\n" + "\n".join(
            f"  {name:<{width}}  {what}" for name, what in BENCHMARKS.items()))
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    name = sys.argv.pop(1)
    sys.argv[0] = f"bench.studies.micro {name}"
    importlib.import_module(f"bench.studies.micro.{name.replace('-', '_')}").main()


if __name__ == "__main__":
    main()
