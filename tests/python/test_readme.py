"""The README's Python samples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_samples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Samples write files (a session store) where they run: a fresh directory each time.
    monkeypatch.chdir(tmp_path)
    samples = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert len(samples) >= 2, "the README has Python samples"
    for sample in samples:
        exec(compile(sample, str(README), "exec"), {"__name__": "readme"})  # noqa: S102 (our own README)
    printed = capsys.readouterr().out
    assert printed.startswith("done\nrun run_") and "tool_call deploy c1: " in printed, printed
    assert (tmp_path / "sessions.db").exists()
