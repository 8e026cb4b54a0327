"""Models: the embedded SmolLM2 and any transformers policy (`embedded`), and the embedded
models as the litellm provider ``local/...`` (`provider`). Agents, judges and trainers all
load models from here."""

from .embedded import (
    EMBEDDED_ALIASES,
    INSTALL_WEIGHTS,
    LOCAL_MODELS,
    GGUFLoader,
    UnknownLocalModelError,
    load_local_model,
    load_local_tokenizer,
    load_model,
    peft_quietly,
    unmark_quantized,
)
from .provider import DEFAULT_MAX_TOKENS, JSON_INSTRUCTION, PROVIDER, generate, register_local_provider

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMBEDDED_ALIASES",
    "INSTALL_WEIGHTS",
    "JSON_INSTRUCTION",
    "LOCAL_MODELS",
    "PROVIDER",
    "GGUFLoader",
    "UnknownLocalModelError",
    "generate",
    "load_local_model",
    "load_local_tokenizer",
    "load_model",
    "peft_quietly",
    "register_local_provider",
    "unmark_quantized",
]
