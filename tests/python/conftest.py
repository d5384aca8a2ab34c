"""Shared fixtures: scripted models for the common shapes of a run."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from starweaver.testing import TestModel
from starweaver.types import JsonValue, Message, ToolReturnPart


def calls_then_text(calls: Sequence[Mapping[str, object]], text: str = "done") -> TestModel:
    """A model that makes one response of tool calls, then answers ``text``."""
    return TestModel.responses([TestModel.tool_call_response(calls), {"text": text}])


def call(call_id: str, name: str, arguments: Mapping[str, object] | None = None) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": dict(arguments or {})}


def loose(value: JsonValue) -> Any:  # noqa: ANN401 (what it holds is what the test asserts)
    """JSON the runtime handed out (typed ``JsonValue``), for a test to read deep into
    without narrowing each level: an error return's ``content``, a schema."""
    return value


def returns(messages: Sequence[Message]) -> list[ToolReturnPart]:
    """Every tool return in a history, in order."""
    return [part for m in messages if m["kind"] == "request" for part in m["parts"] if part["kind"] == "tool_return"]


_exit_status: list[int] = []


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status.append(int(exitstatus))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Leaves without interpreter finalization once Temporal's client was used: its bridge
    threads can abort a finalizing interpreter after every test passed
    (temporalio/sdk-python#300). The report is complete by now."""
    if "temporalio.client" in sys.modules and _exit_status:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[0])
