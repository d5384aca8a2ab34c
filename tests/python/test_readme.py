"""The Python samples of the README and of every docs/ page run as written."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_samples(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(), flags=re.DOTALL | re.MULTILINE)


def readme_printed(printed: str, where: Path) -> None:
    assert python_samples(ROOT / "README.md"), "the README has a Python quickstart"


def sessions_printed(printed: str, where: Path) -> None:
    # The store sample prints the resumed run's output, then its trace summary.
    assert printed.startswith("done\nrun run_") and "tool_call deploy c1: " in printed, printed
    assert (where / "sessions.db").exists()


# What a page's samples print, where a page promises it.
CHECKS: dict[str, Callable[[str, Path], None]] = {
    "README.md": readme_printed,
    "sessions.md": sessions_printed,
}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_python_samples_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Samples write files (a session store) where they run: a fresh directory per page.
    monkeypatch.chdir(tmp_path)
    # A page's samples run in order, each in a namespace of its own; a sample guarded by
    # `if __name__ == "__main__"` is a script to run from the repository root, and only defines here.
    for sample in python_samples(page):
        exec(compile(sample, str(page), "exec"), {"__name__": "docs"})  # noqa: S102 (our own pages)
    check = CHECKS.get(page.name)
    if check is not None:
        check(capsys.readouterr().out, tmp_path)
