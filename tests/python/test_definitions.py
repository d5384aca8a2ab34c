"""Snapshots of Python tool definitions (spec samples and a corpus of signatures), beside
the Rust ones in `snapshots/` and in the same format, so a changed schema shows up in
`cargo insta review` whatever language the tool is written in."""

from __future__ import annotations

import datetime
import enum
import uuid
from pathlib import Path
from typing import Annotated, Literal

import pytest
import test_spec_samples as spec
from conftest import loose
from pydantic import BaseModel, Field
from snapshot import assert_snapshot

from starweaver import Tool, ToolContext, tool


class Priority(enum.Enum):
    """How urgent something is."""

    LOW = "low"
    URGENT = "urgent"


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = Field(description="City name.")


class Customer(BaseModel):
    name: str
    address: Address
    previous: list[Address] = []


@tool
async def documented(path: str, max_bytes: int | None = None) -> str:
    """Read a file.

    Args:
        path: Where the file is.
        max_bytes: Stop after this many bytes.
    """
    return path


@tool
def numpy_style(left: float, right: float) -> float:
    """Multiply two numbers.

    Parameters
    ----------
    left
        The first factor.
    right
        The second factor.
    """
    return left * right


@tool
def sphinx_style(text: str) -> str:
    """Shout.

    :param text: What to shout.
    """
    return text.upper()


@tool
async def annotated(
    ctx: ToolContext,
    query: Annotated[str, Field(description="What to search for.", min_length=1)],
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
) -> list[str]:
    """Search."""
    return [query] * limit


@tool(name="file_ticket", description="File a ticket.", strict=True, metadata={"risk": "low"})
async def literals_and_enums(title: str, priority: Priority, kind: Literal["bug", "feature"] = "bug") -> str:
    return title


@tool
async def nested(customer: Customer, tags: dict[str, str]) -> Customer:
    """Register a customer."""
    return customer


@tool(timeout_ms=1_000, max_retries=0, sequential=True)
async def times(at: datetime.datetime, request_id: uuid.UUID, day: datetime.date | None = None) -> str:
    """Schedule something."""
    return str(at)


CORPUS: dict[str, Tool[..., object]] = {
    "documented": documented,
    "numpy_style": numpy_style,
    "sphinx_style": sphinx_style,
    "annotated": annotated,
    "literals_and_enums": literals_and_enums,
    "nested": nested,
    "times": times,
    "spec_add": spec.add,
    "spec_lookup": spec.lookup,
    "spec_fetch_ticket": spec.fetch_ticket,
    "spec_inspect_payload": spec.inspect_payload,
    "spec_context_deploy": spec.context_deploy,
    "spec_append_audit_line": spec.append_audit_line,
    "spec_inspect_release": spec.inspect_release,
    "spec_approval_deploy": spec.deploy,
    "spec_fetch_status": spec.fetch_status,
}


@pytest.mark.parametrize("label", sorted(CORPUS))
def test_definition_snapshot(label: str) -> None:
    assert_snapshot(f"python__{label}", CORPUS[label].definition.to_json())


def test_class_tool_snapshot() -> None:
    assert_snapshot("python__spec_class_deploy", spec.DeployTool().definition.to_json())


def test_parameter_descriptions_come_from_docstrings_and_fields() -> None:
    for t in (documented, numpy_style, sphinx_style):
        properties = loose(t.definition.parameters["properties"])
        assert all(p.get("description") for p in properties.values()), t.definition.to_json()
    assert loose(annotated.definition.parameters["properties"])["query"]["description"] == "What to search for."
    assert documented.definition.description == "Read a file."


def test_a_changed_definition_fails_and_leaves_a_pending_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import snapshot

    monkeypatch.setattr(snapshot, "SNAPSHOTS", tmp_path)
    monkeypatch.setenv("INSTA_UPDATE", "auto")
    monkeypatch.delenv("CI", raising=False)
    snapshot.assert_snapshot("probe", '{"a": 1}')
    with pytest.raises(AssertionError, match="snapshot `probe` changed"):
        snapshot.assert_snapshot("probe", '{"a": 2}')
    assert (tmp_path / "probe.snap.new").read_text().endswith('{"a": 2}\n')


class Item(BaseModel):
    sku: str


def nested_forward_reference(items: list["Item"], mode: Annotated[Literal["a", "b"], "metadata, not a name"]) -> None:  # noqa: UP037
    """Annotations with strings inside them take the exact path."""


@pytest.mark.parametrize("label", sorted(CORPUS))
def test_fast_annotation_resolution_agrees_with_get_type_hints(label: str) -> None:
    """`@tool` resolves string annotations with cached compiled code; it must see exactly what
    `typing.get_type_hints` sees, for every function in the corpus."""
    import inspect
    import typing

    from starweaver import _schema

    fn = inspect.unwrap(CORPUS[label])
    # Compared by repr: each evaluation builds new (identity-compared) `Field(...)` objects.
    assert repr(_schema.type_hints(fn, None)) == repr(typing.get_type_hints(fn, include_extras=True))


def test_annotations_with_strings_inside_them_are_resolved_like_get_type_hints() -> None:
    import typing

    from starweaver import _schema

    hints = _schema.type_hints(nested_forward_reference, None)
    assert hints == typing.get_type_hints(nested_forward_reference, include_extras=True)
    assert hints["items"] == list[Item]
    items = loose(tool(nested_forward_reference).definition.parameters["properties"])["items"]
    assert items["items"] == {"$ref": "#/$defs/Item"}, items
