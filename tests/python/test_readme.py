"""The README's Python samples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_samples_run() -> None:
    samples = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert samples, "the README has Python samples"
    for sample in samples:
        exec(compile(sample, str(README), "exec"), {"__name__": "readme"})  # noqa: S102 (our own README)
