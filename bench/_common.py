"""What both scenario scripts share: the tool bodies and the measurement helpers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from pydantic import BaseModel

CALLS = 1_000
STEPS = (100, 1_000)
SLEEPERS = 100
MEMORY_CALLS = 10_000


def timed(run: Callable[[], Awaitable[object]], *, warm_up: bool = True) -> float:
    """Seconds for one awaited run, after one warm-up run unless told otherwise."""

    async def go() -> float:
        if warm_up:
            await run()
        started = time.perf_counter()
        await run()
        return time.perf_counter() - started

    return asyncio.run(go())


async def mean_ms(run: Callable[[int], Awaitable[object]], runs: int = 20, warm_up: int = 3) -> float:
    """Mean ms of `run(n)` over `runs` runs, after `warm_up` untimed ones."""
    for n in range(warm_up):
        await run(n)
    started = time.perf_counter()
    for n in range(warm_up, warm_up + runs):
        await run(n)
    return (time.perf_counter() - started) / runs * 1e3


def peak_rss_growth(run: Callable[[], Awaitable[object]]) -> float:
    """MiB the process's peak resident set grew by during one run."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    asyncio.run(run())  # type: ignore[arg-type]
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (after - before) / 1024


def definition_cost(define: Callable[[Callable[..., object]], object]) -> None:
    """P5: reports µs to ``define`` the schema of a fresh four-parameter function with a
    Google docstring, so no cache keyed on the function can hit. Round 0 warms up (loads
    pydantic, fills caches); the other rounds are timed."""
    rounds = 200
    started = 0.0
    for round_ in range(rounds + 1):
        if round_ == 1:
            started = time.perf_counter()

        def lookup(ticket_id: str, limit: int, include_history: bool = False, since: str | None = None) -> str:
            """Look up a ticket.

            Args:
                ticket_id: The ticket.
                limit: How many entries.
                include_history: Include the history.
                since: Only after this.
            """
            return ticket_id

        assert define(lookup)
    report((time.perf_counter() - started) / rounds * 1e6)


@contextlib.contextmanager
def sse_server() -> Iterator[str]:
    """P9's loopback server in a process of its own (its CPU is not ours); its base URL."""
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("sse_server.py"))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.kill()
        server.wait()


def cpu_per_chunk(run: Callable[[], Awaitable[object]], chunks: int) -> None:
    """P9: reports µs of this process's CPU (every thread) per streamed chunk, for one
    run after a warm-up run."""

    async def go() -> float:
        await run()
        started = time.process_time()
        await run()
        return time.process_time() - started

    report(asyncio.run(go()) / chunks * 1e6)


def report(value: float, **extra: float) -> None:
    # Flushed: the Temporal scripts leave with os._exit, which skips flushing.
    print(json.dumps({"value": value, **extra}), flush=True)


def main(scenarios: dict[str, Callable[[], None]]) -> None:
    scenarios[sys.argv[1]]()


class Invoice(BaseModel):
    """P14's output: ten fields of the usual kinds."""

    number: str
    customer: str
    email: str
    currency: str
    total_cents: int
    tax_cents: int
    lines: int
    paid: bool
    due_days: int
    note: str


INVOICE = {
    "number": "A-7",
    "customer": "Ada",
    "email": "ada@example.com",
    "currency": "EUR",
    "total_cents": 1250,
    "tax_cents": 250,
    "lines": 3,
    "paid": False,
    "due_days": 30,
    "note": "thanks",
}
#: Runs timed per P14 measurement.
RUNS = 2000
