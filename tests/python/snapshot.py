"""insta-format snapshots for Python tool definitions, in the same `snapshots/` folder and
review flow as the Rust ones: a mismatch writes `<name>.snap.new` beside the snapshot, so
`cargo insta review` (or `cargo insta accept`) shows Python and Rust changes alike.

`INSTA_UPDATE=always` rewrites snapshots; `INSTA_UPDATE=no` (CI) only compares.
"""

from __future__ import annotations

import os
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
SOURCE = "tests/python/test_definitions.py"


def assert_snapshot(name: str, body: str, source: str = SOURCE) -> None:
    """Compares ``body`` with ``snapshots/<name>.snap``."""
    path = SNAPSHOTS / f"{name}.snap"
    content = f"---\nsource: {source}\n---\n{body}\n"
    mode = os.environ.get("INSTA_UPDATE", "no" if os.environ.get("CI") else "auto")
    if path.exists() and path.read_text() == content:
        return
    if mode == "always" or (mode == "auto" and not path.exists()):
        path.write_text(content)
        return
    if mode != "no":
        path.with_name(f"{name}.snap.new").write_text(content)
    old = path.read_text() if path.exists() else "(no snapshot)"
    raise AssertionError(
        f"snapshot `{name}` changed; review with `cargo insta review`\n--- old\n{old}\n--- new\n{content}"
    )
