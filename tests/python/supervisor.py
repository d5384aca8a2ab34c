"""The crash supervisor: inputs that could kill the interpreter run in a child process, so
a regression is one failed test naming the signal, not a dead test run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).parent


def run_isolated(code: str, timeout: float = 60) -> dict[str, object]:
    """Runs ``code`` in a fresh interpreter. The code sets ``result`` (any JSON value); the
    child prints it as its last line. A crash, a hang or an uncaught error fails with what
    the child said."""
    program = textwrap.dedent(code) + "\nimport json as _json\nprint(_json.dumps({'result': result}))\n"
    try:
        done = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=timeout, cwd=HERE
        )
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"the child hung for {timeout} s (DESIGN.md §16: no hang)") from error
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        raise AssertionError(f"the child was killed by {name}: the interpreter crashed\n{done.stderr[-3000:]}")
    if done.returncode != 0:
        raise AssertionError(f"the child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    last = done.stdout.strip().splitlines()[-1]
    outcome: dict[str, object] = json.loads(last)
    return outcome
