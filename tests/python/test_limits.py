"""DESIGN.md §18 from Python: usage limits. Checked before each model request and before
each call starts; nothing past a limit starts, and the run fails with a
`UsageLimitExceeded` naming the limit and the count."""

from __future__ import annotations

import asyncio

import pytest
from conftest import call, calls_then_text, returns

from starweaver import (
    RegistrationError,
    RunFailedError,
    Toolset,
    UsageLimitExceeded,
    UsageLimits,
    create_agent,
    tool,
)
from starweaver.testing import TestModel

ran: list[int] = []


@tool
def work(n: int) -> int:
    """Does one piece of work."""
    ran.append(n)
    return n


def five_calls() -> TestModel:
    return calls_then_text([call(f"c{n}", "work", {"n": n}) for n in range(5)], "finished")


def test_calls_past_the_tool_calls_limit_never_start_and_the_run_fails_naming_it() -> None:
    ran.clear()
    agent = create_agent(model=five_calls(), tools=[work], usage_limits=UsageLimits(tool_calls=2))
    result = agent.run_sync("work")
    assert result.status == "failed"
    assert ran == [0, 1], "the third call and after never started"
    error = result.exception
    assert isinstance(error, UsageLimitExceeded) and isinstance(error, RunFailedError)
    assert (error.limit, error.max, error.count) == ("tool_calls", 2, 2)
    assert str(error) == "the run reached its usage limit of 2 tool_calls (2 used); nothing past it started"
    kinds = [r["content"]["kind"] if isinstance(r["content"], dict) else None for r in returns(result.messages)]
    assert kinds == [None, None, "limit_reached", "limit_reached", "limit_reached"]
    with pytest.raises(UsageLimitExceeded):
        result.raise_for_status()


def test_a_runs_limits_replace_the_agents_for_that_run_and_requests_and_tokens_are_bounded() -> None:
    ran.clear()
    agent = create_agent(model=five_calls(), tools=[work], usage_limits=UsageLimits(tool_calls=2))
    assert agent.run_sync("work", usage_limits=UsageLimits(tool_calls=5)).status == "completed"
    assert ran == [0, 1, 2, 3, 4]

    spent = TestModel.tool_call_response([call("c1", "work", {"n": 1})])
    spent["usage"] = {"requests": 1, "input_tokens": 80, "output_tokens": 30, "cached_tokens": 0}
    model = TestModel.responses([spent, spent, {"text": "finished"}])
    session = create_agent(model=model, tools=[work]).session()
    result = asyncio.run(session.run("work", usage_limits=UsageLimits(requests=5, total_tokens=100)))
    assert isinstance(result.exception, UsageLimitExceeded)
    assert (result.exception.limit, result.exception.count, result.usage.requests) == ("total_tokens", 110, 1)


def test_limits_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="`tool_calls` must be 0 or more, got -1"):
        UsageLimits(tool_calls=-1)
    assert repr(UsageLimits(requests=3, total_tokens=1000)) == "UsageLimits(requests=3, total_tokens=1000)"
    assert UsageLimits().requests is None


def test_calls_past_a_tools_max_uses_get_a_limit_reached_return_and_the_run_goes_on() -> None:
    """DESIGN.md §18, per-tool budgets: `max_uses` is a tool option (one per run); calls
    past it do not run, and their `limit_reached` return is not a retry."""
    charged: list[int] = []

    @tool(max_uses=2)
    def charge(cents: int) -> int:
        """Charges a card."""
        charged.append(cents)
        return cents

    assert charge.definition.max_uses == 2 and charge.definition.to_dict()["max_uses"] == 2
    agent = create_agent(
        model=calls_then_text([call(f"c{n}", "charge", {"cents": n}) for n in range(4)], "ok"), tools=[charge]
    )
    result = agent.run_sync("charge")
    assert (result.status, result.output) == ("completed", "ok")
    assert charged == [0, 1]
    contents = [r["content"] for r in returns(result.messages)]
    assert (
        contents[2:]
        == [
            {
                "kind": "limit_reached",
                "message": "`charge` may be called at most 2 times in a run, and it was",
                "success": False,
            }
        ]
        * 2
    )
    with pytest.raises(RegistrationError, match="invalid tool `never`: `max_uses` must be at least 1"):

        @tool(max_uses=0)
        def never() -> None:
            """Cannot be called."""


def _returned(result_messages: object) -> list[tuple[object, object]]:
    """Each tool return's model-facing content and host-only value, in order."""
    return [(r["content"], r.get("value")) for r in returns(result_messages)]  # type: ignore[arg-type]


@tool(max_return_chars=10)
def page() -> str:
    """Reads a long page."""
    return "a" * 30


def test_a_return_past_max_return_chars_is_cut_for_the_model_and_kept_whole_for_the_host() -> None:
    """DESIGN.md §18, return size: the model sees the first characters and a marker with
    how many were cut; the whole value stays host-only (the history's `value`)."""
    assert page.definition.max_return_chars == 10 and page.definition.to_dict()["max_return_chars"] == 10
    model = calls_then_text([call("c1", "page")])
    result = create_agent(model=model, tools=[page]).run_sync("read")
    cut = "a" * 10 + "… [20 more characters cut]"
    assert _returned(result.messages) == [(cut, "a" * 30)]
    sent = str(model.requests[1]["messages"])
    assert cut in sent and "a" * 30 not in sent, "the model never sees the whole value"


def test_the_most_specific_max_return_chars_wins_tool_then_toolset_then_agent() -> None:
    long = "b" * 40

    @tool(max_return_chars=5)
    def own() -> str:
        return long

    @tool
    def grouped() -> str:
        return long

    @tool(max_return_chars=3)
    def grouped_own() -> str:
        return long

    @tool
    def plain() -> str:
        return long

    docs = Toolset("docs", [grouped, grouped_own], max_return_chars=8)
    assert docs.max_return_chars == 8
    model = calls_then_text([call(n, n) for n in ["own", "grouped", "grouped_own", "plain"]])
    agent = create_agent(model=model, tools=[own, plain], toolsets=[docs], max_return_chars=12)
    kept = [str(content).split("…")[0] for content, _ in _returned(agent.run_sync("read").messages)]
    assert [len(k) for k in kept] == [5, 8, 3, 12]


def test_cuts_count_characters_and_a_dict_is_cut_as_its_json_text() -> None:
    @tool(max_return_chars=4)
    def text() -> str:
        return "日本語のテキスト🦀🦀"

    @tool(max_return_chars=20)
    def rows() -> dict[str, object]:
        return {"rows": [1, 2, 3], "note": "ünïcode"}

    model = calls_then_text([call("c1", "text"), call("c2", "rows")])
    result = create_agent(model=model, tools=[text, rows]).run_sync("read")
    assert _returned(result.messages) == [
        ("日本語の… [6 more characters cut]", "日本語のテキスト🦀🦀"),
        ('{"rows":[1,2,3],"not… [13 more characters cut]', {"rows": [1, 2, 3], "note": "ünïcode"}),
    ]


def test_max_return_chars_of_zero_is_refused_by_name() -> None:
    with pytest.raises(RegistrationError, match="`max_return_chars` must be at least 1"):

        @tool(max_return_chars=0)
        def never() -> str:
            return ""

    with pytest.raises(ValueError, match="`max_return_chars` must be at least 1"):
        Toolset("docs", [page]).with_max_return_chars(0)
    with pytest.raises(RegistrationError, match="max_return_chars"):
        create_agent(model=calls_then_text([]), tools=[page], max_return_chars=0)
