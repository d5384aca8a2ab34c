"""How the model is asked for a typed output (DESIGN.md §17): by default through output
tools; ``NativeOutput(T)`` through the provider's JSON-schema response format;
``PromptedOutput(T)`` through the instructions. Pass one as ``create_agent(output_type=...)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["NativeOutput", "PromptedOutput"]

T = TypeVar("T")


class NativeOutput(Generic[T]):
    """``output_type=NativeOutput(T)``: the model is asked for ``T`` through its provider's
    JSON-schema response format (OpenAI Chat and Responses ``json_schema``, Gemini
    ``responseSchema``), and its answer's text is ``T``'s JSON. A model without one is
    refused by name when the agent is built. One type, not a union."""

    def __init__(self, output_type: type[T] | Callable[..., T]) -> None:
        self.output_type = output_type


class PromptedOutput(Generic[T]):
    """``output_type=PromptedOutput(T)``: ``T``'s schema goes in the instructions, and the
    model's answer (its text) is parsed as ``T``'s JSON. Any model. One type, not a union."""

    def __init__(self, output_type: type[T] | Callable[..., T]) -> None:
        self.output_type = output_type
