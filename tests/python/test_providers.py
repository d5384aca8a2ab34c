"""Issue 5 for Python tools: every corpus signature in every strict mode and provider format,
snapshotted in ``snapshots/python__providers__<tool>.snap``; every rendering checked against
the JSON Schema meta-schema and against the provider's documented rules (the Rust checker).
Also: strict tri-state, defaults for nulls, required parameter descriptions, ``inspect``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from conftest import call, calls_then_text, loose, returns
from corpus_tools import CORPUS, defaults, recursive_tree, strict_booking
from jsonschema import Draft202012Validator
from snapshot import assert_snapshot

from starweaver import RegistrationError, RenderError, create_agent, tool
from starweaver.providers import PROVIDERS, Provider, check, definition_of, render

HERE = Path(__file__).parent
MODES: dict[str, bool | None] = {"auto": None, "strict": True, "lax": False}


def schema_of(provider: Provider, rendered: dict[str, Any]) -> dict[str, Any] | None:
    if provider == "openai-chat":
        parameters: dict[str, Any] = rendered["function"]["parameters"]
        return parameters
    key = "input_schema" if provider == "anthropic" else "parameters"
    return rendered.get(key)


@pytest.mark.parametrize("item", CORPUS, ids=lambda t: definition_of(t).name)
def test_every_signature_in_every_mode_and_provider_format_meets_the_provider_rules(item: Any) -> None:
    name = definition_of(item).name
    problems: list[str] = []
    modes: dict[str, dict[str, object]] = {}
    for mode, strict in MODES.items():
        modes[mode] = {}
        for provider in PROVIDERS:
            try:
                rendered = render(item, provider, strict=strict)
            except RenderError as error:
                modes[mode][provider] = {"error": str(error)}
                continue
            problems += [f"{mode} {provider}: {p}" for p in check(provider, rendered)]
            schema = schema_of(provider, rendered)
            if schema is not None:
                problems += [
                    f"{mode} {provider}: {e.message}"
                    for e in Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema)
                ]
            modes[mode][provider] = rendered
    body = json.dumps({"modes": modes}, indent=2, ensure_ascii=False)
    assert_snapshot(f"python__providers__{name}", body, source="tests/python/test_providers.py")
    assert problems == []


def test_the_corpus_has_at_least_25_signatures() -> None:
    assert len(CORPUS) >= 25


def test_strict_is_tri_state() -> None:
    # Unset and compatible: strict; unset and a dict parameter: lax; `True` on a dict: refused.
    assert loose(render(defaults, "openai-chat")["function"])["strict"] is True
    assert loose(render(defaults, "openai-chat")["function"])["parameters"]["required"] == ["city", "days", "metric"]

    @tool
    async def tally(counts: dict[str, int]) -> int:
        """Count."""
        return sum(counts.values())

    assert "strict" not in loose(render(tally, "openai-chat")["function"])
    assert render(tally, "openai-responses")["strict"] is False
    with pytest.raises(
        RegistrationError,
        match=r"`strict: true`, but the parameters schema at `/properties/counts/additionalProperties`: a map",
    ):

        @tool(strict=True)
        async def strict_tally(counts: dict[str, int]) -> int:
            """Count."""
            return sum(counts.values())

    with pytest.raises(RenderError, match=r"tool `tally` cannot be rendered for openai-chat: cannot be strict"):
        render(tally, "openai-chat", strict=True)
    with pytest.raises(RenderError, match=r"recursive \(TreeNode -> TreeNode\), so it cannot be inlined"):
        render(recursive_tree, "gemini")
    with pytest.raises(ValueError, match="unknown provider `openai`; expected one of `openai-chat`"):
        render(defaults, "openai")  # type: ignore[arg-type]


def test_a_null_for_a_defaulted_parameter_reaches_the_tool_as_the_default() -> None:
    model = calls_then_text([call("c1", "strict_booking", {"room": "12", "nights": None})])
    result = asyncio.run(create_agent(model=model, tools=[strict_booking]).run("book"))
    assert returns(result.messages)[0]["content"] == {"room": "12", "nights": 1}


def test_an_agent_can_require_every_parameter_to_be_described() -> None:
    @tool
    async def forecast(city: str, days: int = 3) -> str:
        """Forecast.

        Args:
            city: The city.
        """
        return city

    with pytest.raises(RegistrationError, match=r"invalid tool `forecast`: parameter `days` has no description"):
        create_agent(model=calls_then_text([]), tools=[forecast], require_parameter_descriptions=True)
    create_agent(model=calls_then_text([]), tools=[forecast])


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "starweaver", "inspect", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=HERE, check=False)


def test_inspect_prints_definitions_and_provider_formats_as_json() -> None:
    plain = inspect("corpus_tools.py")
    assert plain.returncode == 0, plain.stderr
    definitions = json.loads(plain.stdout)
    assert [d["name"] for d in definitions] == [definition_of(t).name for t in CORPUS]
    assert definitions[1] == defaults.definition.to_dict()

    gemini = inspect("corpus_tools", "--provider", "anthropic")
    assert gemini.returncode == 0, gemini.stderr
    assert json.loads(gemini.stdout)[1] == render(defaults, "anthropic")

    strict = inspect("export_agent.py", "--strict")
    assert strict.returncode == 0, strict.stderr
    add = json.loads(strict.stdout)[0]
    assert add["strict"] is True and add["parameters"]["additionalProperties"] is False


def test_inspect_names_what_is_wrong_with_a_bad_target(tmp_path: Path) -> None:
    missing = inspect("no_such_module_here")
    assert (missing.returncode, missing.stderr) == (2, "starweaver inspect: no module named 'no_such_module_here'\n")
    empty = inspect("json")
    assert empty.returncode == 2 and "json holds no tools" in empty.stderr
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom at import')\n")
    failed = inspect(str(broken))
    assert failed.returncode == 2 and failed.stderr.endswith("failed: RuntimeError: boom at import\n"), failed.stderr
    unrenderable = inspect("corpus_tools.py", "--provider", "openai-chat", "--strict")
    assert unrenderable.returncode == 1 and "cannot be strict" in unrenderable.stderr, unrenderable.stderr
    assert unrenderable.stdout == ""


def test_the_provider_literal_names_exactly_the_runtimes_providers() -> None:
    assert get_args(Provider) == PROVIDERS
