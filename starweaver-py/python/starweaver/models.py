"""Real models: OpenAI (Chat Completions, and every OpenAI-compatible server through
``base_url``), OpenAI Responses, Anthropic and Gemini, run by the Rust clients.

``create_agent(model="openai:gpt-4.1-mini")`` picks one by name; the classes here take
every option. Keys and base URLs default to the usual environment variables
(``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from ._native import NativeProviderModel
from .exceptions import RegistrationError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .types import ModelSettings

__all__ = [
    "PREFIXES",
    "AnthropicModel",
    "AzureOpenAIModel",
    "GeminiModel",
    "KnownModel",
    "ModelSettings",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ProviderModel",
    "infer_model",
]


def __getattr__(name: str) -> object:
    # `ModelSettings` lives with the other TypedDicts, which (with typing_extensions) stay
    # out of `import starweaver`; it is still importable from here at run time.
    if name == "ModelSettings":
        from .types import ModelSettings

        return ModelSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ProviderModel:
    """A model behind a provider's API; the runtime's handle is ``native``."""

    protocol: ClassVar[str]

    def __init__(self, name: str, **settings: Unpack[ModelSettings]) -> None:
        self.native = NativeProviderModel(self.protocol, name, **settings)

    @property
    def name(self) -> str:
        """The model's name as given."""
        return self.native.name

    def __repr__(self) -> str:
        return repr(self.native)


class OpenAIChatModel(ProviderModel):
    """OpenAI Chat Completions, or any OpenAI-compatible server (vLLM, llama.cpp, Ollama,
    LM Studio, OpenRouter) through ``base_url``."""

    protocol = "openai-chat"


class OpenAIResponsesModel(ProviderModel):
    """OpenAI Responses."""

    protocol = "openai-responses"


class AnthropicModel(ProviderModel):
    """Anthropic Messages."""

    protocol = "anthropic"


class GeminiModel(ProviderModel):
    """Gemini ``generateContent`` (``streamGenerateContent`` when streamed)."""

    protocol = "gemini"


class AzureOpenAIModel(OpenAIChatModel):
    """Azure OpenAI: ``base_url`` is the deployment's
    (``https://<resource>.openai.azure.com/openai/deployments/<deployment>``)."""

    def __init__(self, name: str, *, api_version: str, **settings: Unpack[ModelSettings]) -> None:
        self.native = NativeProviderModel(self.protocol, name, azure_api_version=api_version, **settings)


KnownModel = OpenAIChatModel | OpenAIResponsesModel | AnthropicModel | GeminiModel

PREFIXES: dict[str, type[ProviderModel]] = {
    "openai": OpenAIChatModel,
    "openai-responses": OpenAIResponsesModel,
    "anthropic": AnthropicModel,
    "google": GeminiModel,
}
"""The prefixes of ``"provider:model"`` names."""


def infer_model(name: str) -> ProviderModel:
    """The model a ``"provider:model"`` name stands for (``"openai:gpt-4.1-mini"``)."""
    prefix, sep, model = name.partition(":")
    cls = PREFIXES.get(prefix)
    if not sep or not model or cls is None:
        known = ", ".join(f"`{p}:`" for p in PREFIXES)
        raise RegistrationError(f"unknown model `{name}`: the name must start with one of {known}")
    return cls(model)
