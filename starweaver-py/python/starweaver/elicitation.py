"""What a tool asks for mid-call, and the answers: ``await ctx.elicit(message, T)`` gives
``Accepted(data)`` (the user's answer, validated into ``T``), ``Declined()`` or
``Cancelled()``; ``await ctx.sample(...)`` gives a ``Sampled`` completion.

    from starweaver.elicitation import Accepted

    answer = await ctx.elicit("Which environment?", Target)
    match answer:
        case Accepted(data=target):
            ...  # a Target
        case _:
            ...  # declined or cancelled

In an agent run, ``create_agent(elicitation_handler=...)`` answers: a function (sync or
async) taking ``(ctx, message, schema)`` and returning one of the three (or a dict, which
accepts it)."""

from __future__ import annotations

import dataclasses
from typing import Generic, Literal, TypeAlias, TypeVar

__all__ = ["Accepted", "Cancelled", "Declined", "Elicited", "Sampled", "T"]

#: The type of the value a tool asks for.
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Accepted(Generic[T]):
    """The user gave a value."""

    data: T
    action: Literal["accept"] = "accept"


@dataclasses.dataclass(frozen=True)
class Declined:
    """The user said no; the tool goes on without it."""

    action: Literal["decline"] = "decline"


@dataclasses.dataclass(frozen=True)
class Cancelled:
    """The user dismissed the question."""

    action: Literal["cancel"] = "cancel"


Elicited: TypeAlias = Accepted[T] | Declined | Cancelled


@dataclasses.dataclass(frozen=True)
class Sampled:
    """A model's completion: its text, the model that answered and why it stopped, when known."""

    text: str
    model: str | None = None
    stop_reason: str | None = None
