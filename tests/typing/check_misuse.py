"""Runs mypy --strict and pyright (strict) on misuse.py and checks each rejects exactly the
lines marked `# error`: misuse must fail to type-check, and nothing else may."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MISUSE = HERE / "misuse.py"


def expected_lines() -> set[int]:
    lines = MISUSE.read_text().splitlines()
    return {number for number, line in enumerate(lines, start=1) if line.rstrip().endswith("# error")}


def mypy_lines() -> set[int]:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(MISUSE)],
        capture_output=True,
        text=True,
        check=False,
    )
    pattern = re.compile(rf"{re.escape(MISUSE.name)}:(\d+): error:")
    return {int(m.group(1)) for line in run.stdout.splitlines() if (m := pattern.search(line))}


def pyright_lines() -> set[int]:
    pyright = Path(sys.executable).with_name("pyright")
    run = subprocess.run(
        [str(pyright), "--outputjson", "--project", str(HERE / "pyright-misuse.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    report: dict[str, list[dict[str, Any]]] = json.loads(run.stdout)
    return {int(d["range"]["start"]["line"]) + 1 for d in report["generalDiagnostics"] if d["severity"] == "error"}


def main() -> int:
    expected = expected_lines()
    failures: list[str] = []
    for checker, found in (("mypy", mypy_lines()), ("pyright", pyright_lines())):
        if missed := sorted(expected - found):
            failures.append(f"{checker} accepted misuse on lines {missed}")
        if extra := sorted(found - expected):
            failures.append(f"{checker} rejected unmarked lines {extra}")
    for failure in failures:
        print(failure)
    print(
        f"typing misuse: {len(expected)} lines, each rejected by mypy and pyright"
        if not failures
        else "typing misuse: FAILED"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
