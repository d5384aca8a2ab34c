"""DESIGN.md §19, rich content: `starweaver.content` parts returned by tools, as the model
sees them, in exported state, and their canonical dicts."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest
from conftest import call, returns
from pydantic import TypeAdapter

from starweaver import ToolResult, create_agent, tool
from starweaver.content import Audio, Document, Image, Part, Resource, ResourceLink, Text, from_dict
from starweaver.testing import TestModel
from starweaver.types import ContentPart

PNG = b"\x89PNG\r\n\x1a\n"


@tool
def chart() -> list[Text | Image]:
    """Draw the chart."""
    return [Text("the chart"), Image(data=PNG, media_type="image/png")]


@tool
def photo() -> Image:
    """One photo, by URL."""
    return Image(url="https://example.com/p.jpg", media_type="image/jpeg")


@tool
def report() -> ToolResult:
    """A PDF for the model, the record for the application."""
    pdf = Document(data=b"%PDF-1.7", media_type="application/pdf", title="Q3", filename="q3.pdf")
    return ToolResult({"id": 3}, model_content=[Text("Q3 report"), pdf])


def script() -> TestModel:
    return TestModel.responses(
        [
            TestModel.tool_call_response([call("c1", "chart"), call("c2", "photo"), call("c3", "report")]),
            {"text": "done"},
        ]
    )


EXPECTED = [
    [
        {"kind": "text", "text": "the chart"},
        {"kind": "image", "data": "iVBORw0KGgo=", "media_type": "image/png"},
    ],
    {"kind": "image", "url": "https://example.com/p.jpg", "media_type": "image/jpeg"},
    [
        {"kind": "text", "text": "Q3 report"},
        {
            "kind": "document",
            "data": "JVBERi0xLjc=",
            "media_type": "application/pdf",
            "title": "Q3",
            "filename": "q3.pdf",
        },
    ],
]


def test_tools_return_parts_directly_or_as_model_content_and_the_model_sees_them() -> None:
    model = script()
    result = create_agent(model=model, tools=[chart, photo, report]).run_sync("go")
    assert result.status == "completed", result.error
    got = returns(result.messages)
    assert [r["content"] for r in got] == EXPECTED
    # `model_content` replaced the value for the model; the value stays on the host.
    assert got[2].get("value") == {"id": 3}
    sent = returns(model.requests[1]["messages"])
    assert [r["content"] for r in sent] == EXPECTED
    assert "value" not in sent[2]


def test_exported_state_keeps_every_part_exactly() -> None:
    async def scenario() -> None:
        agent = create_agent(model=script(), tools=[chart, photo, report])
        async with agent.session() as session:
            await session.run("go")
            state = session.export_state()
        assert json.loads(json.dumps(state)) == state
        restored = agent.session(state=state)
        assert restored.export_state() == state
        assert [r["content"] for r in returns(state["history"])] == EXPECTED

    asyncio.run(scenario())


EVERY_PART: list[Part] = [
    Text("hi"),
    Image(data=PNG, media_type="image/png"),
    Image(url="https://example.com/a.png"),
    Audio(data=b"RIFF", media_type="audio/wav"),
    Document(data=b"%PDF-", media_type="application/pdf", title="t", filename="f.pdf"),
    Document(url="https://example.com/r.pdf"),
    ResourceLink("file:///a.txt", "a", description="A", media_type="text/plain"),
    Resource("file:///b.txt", text="bee"),
    Resource("file:///c.bin", blob=b"\x00\x01", media_type="application/octet-stream"),
]


@pytest.mark.parametrize("part", EVERY_PART, ids=lambda p: type(p).__name__)
def test_every_part_reads_back_from_its_canonical_dict(part: Part) -> None:
    as_dict = part.to_dict()
    assert json.loads(json.dumps(as_dict)) == as_dict
    # The dict is exactly its TypedDict: no key undeclared, none missing.
    adapter: TypeAdapter[ContentPart] = TypeAdapter(ContentPart)
    assert adapter.dump_python(adapter.validate_python(as_dict), exclude_unset=True) == as_dict
    assert from_dict(as_dict) == part


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image(), "Image: give `data` (with `media_type`) or `url`"),
        (lambda: Image(data=PNG), "Image: `data` needs its `media_type`"),
        (lambda: Image(data=PNG, media_type="image/png", url="https://e.com"), "not both"),
        (lambda: Image(data=cast(Any, "not bytes"), media_type="image/png"), "Image data must be bytes, not str"),
        (lambda: Resource("u"), "Resource: give `text` or `blob`"),
        (lambda: Resource("u", text="a", blob=b"b"), "Resource: give `text` or `blob`"),
    ],
)
def test_a_part_built_wrong_says_what_is_wrong(make: Any, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"kind": "shout"}, "unknown kind 'shout'"),
        ({"kind": "text", "text": "a", "score": 1}, "the text part has no field 'score'"),
        ({"kind": "audio", "data": "UklGRg=="}, "the audio part needs 'media_type'"),
        ({"kind": "image", "data": "%%", "media_type": "image/png"}, "'data' is not base64"),
    ],
)
def test_a_dict_that_is_not_a_part_is_named(value: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_dict(value)
