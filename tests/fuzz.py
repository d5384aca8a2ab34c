"""`make fuzz`: the property suites (proptest and hypothesis, with the crash supervisor) in
rounds, each with a fresh printed seed, until the time budget is spent; then how many
inputs each surface tried. A failing round stops the campaign and names its seed.

    python tests/fuzz.py [--minutes 10] [--cases 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--cases", type=int, default=2000, help="inputs per property per round")
    options = parser.parse_args()
    deadline = time.monotonic() + options.minutes * 60
    totals: Counter[str] = Counter()
    rounds = 0
    while time.monotonic() < deadline:
        seed = random.SystemRandom().randrange(2**63)
        rounds += 1
        print(f"round {rounds}: seed {seed}", flush=True)
        env = dict(os.environ, PROPTEST_CASES=str(options.cases), PROPTEST_RNG_SEED=str(seed))
        rust = subprocess.run(
            [
                "cargo",
                "test",
                "--quiet",
                "-p",
                "starweaver",
                "--features",
                "providers,mcp",
                "--test",
                "properties",
                "--",
                "--nocapture",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if rust.returncode != 0:
            print(rust.stdout[-5000:], rust.stderr[-5000:], sep="\n")
            print(f"FAILED: rust properties, seed {seed} (rerun with PROPTEST_RNG_SEED={seed})")
            return 1
        for name, n in re.findall(r"property `([^`]+)`: (\d+) inputs", rust.stderr):
            totals[f"rust: {name}"] += int(n)
        with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as counts:
            env = dict(os.environ, STARWEAVER_FUZZ_EXAMPLES=str(options.cases // 4), STARWEAVER_FUZZ_COUNTS=counts.name)
            python = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    f"--hypothesis-seed={seed}",
                    "tests/python/test_properties.py",
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
            if python.returncode != 0:
                print(python.stdout[-8000:], python.stderr[-3000:], sep="\n")
                print(f"FAILED: python properties, seed {seed} (rerun with --hypothesis-seed={seed})")
                return 1
            for line in counts:
                totals.update(json.loads(line))
    print(f"\n{rounds} round(s) in {options.minutes:g} min; no invariant broken. Inputs tried per surface:")
    for name, n in sorted(totals.items()):
        print(f"  {name}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
