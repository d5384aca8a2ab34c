"""How the model is asked for a typed output (DESIGN.md §17): by default through output
tools; ``NativeOutput(T)`` through the provider's JSON-schema response format;
``PromptedOutput(T)`` through the instructions. Pass one as ``create_agent(output_type=...)``.

Both take a union too, as ``A | B`` or as a list of members (``NativeOutput([A, B])``): the
model is asked for ``{"result": {"kind": "<Name>", "data": ...}}``, its ``kind`` naming the
member it answers with, and the output is an instance of that member."""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from types import UnionType
from typing import TYPE_CHECKING, Any, Generic

__all__ = ["NativeOutput", "PromptedOutput"]

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    #: The output's type; `Any` where the checker cannot name it (a union written `A | B`).
    T = TypeVar("T", default=Any)
else:
    # The default matters to the type checkers only: `import starweaver` stays cheap.
    T = typing.TypeVar("T")


class _AskedOutput(Generic[T]):
    """What ``NativeOutput`` and ``PromptedOutput`` share: the output type, or the list of
    a union's members when given a sequence of them.

    One signature, not overloads: a list literal of pydantic models given to an overloaded
    call is refused by mypy (it joins the classes in an empty context first)."""

    def __init__(
        self, output_type: type[T] | Callable[..., T] | Sequence[type[T] | Callable[..., T]] | UnionType
    ) -> None:
        # A sequence of members is their union (pydantic-ai's spelling); it may hold
        # output functions, which `A | B` cannot.
        members: object = output_type
        self.output_type: object = (
            list(typing.cast("Sequence[object]", members)) if isinstance(members, (list, tuple)) else members
        )


class NativeOutput(_AskedOutput[T]):
    """``output_type=NativeOutput(T)``: the model is asked for ``T`` through its provider's
    JSON-schema response format (OpenAI Chat and Responses ``json_schema``, Gemini
    ``responseSchema``), and its answer's text is ``T``'s JSON. A model without one is
    refused by name when the agent is built. ``T`` may be a union (``A | B``, or
    ``NativeOutput([A, B])``), whose answer names its member; not with ``str``."""


class PromptedOutput(_AskedOutput[T]):
    """``output_type=PromptedOutput(T)``: ``T``'s schema goes in the instructions, and the
    model's answer (its text) is parsed as ``T``'s JSON. Any model. ``T`` may be a union
    (``A | B``, or ``PromptedOutput([A, B])``), whose answer names its member; not with
    ``str``."""
