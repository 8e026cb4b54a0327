"""Tiny, randomly initialised models and tokenizers for tests that need a real transformers
model but not a good one (they build in well under a second)."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_tokenizer() -> Any:
    """A word-level fast tokenizer over a small vocabulary, with a ChatML template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>"]
    words = [*string.ascii_lowercase, *string.digits, *"{}[]<>:,./\"'?!_-=$%()", "assistant", "user", "system", "tool"]
    words += ["search", "read", "tool_call", "tool_response", "name", "arguments", "query", "doc_id", "the", "a", "is"]
    vocab = {token: i for i, token in enumerate(dict.fromkeys(specials + words))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", bos_token="<|im_start|>", eos_token="<|im_end|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_llama_config(tokenizer: Any, max_position_embeddings: int = 4096) -> Any:
    """The config of a 2-layer Llama with a 32-wide residual stream over `tokenizer`."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )


def tiny_llama(tokenizer: Any, seed: int = 0) -> Any:
    """A tiny Llama (`tiny_llama_config`), random weights, fp32, eval mode."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(tiny_llama_config(tokenizer)).eval()


def save_tiny_model(folder: Path, seed: int = 0) -> Path:
    """A tiny model and its tokenizer saved as a plain transformers folder."""
    tokenizer = tiny_tokenizer()
    tiny_llama(tokenizer, seed).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
