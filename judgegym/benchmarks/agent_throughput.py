"""Generation throughput of `HFAgent` playing real episodes, at several batch sizes.

The agent plays RagSupport-v0 test episodes (prefetched articles, so prompts are about a
thousand tokens, as in the CPU demo) with as many episodes in flight as the batch size; the
figure is generated tokens per second of wall time inside ``generate``. Throughput does not
depend on the weights, so a randomly initialised model with SmolLM2-135M's config and real
tokenizer is enough: it never stops early, so every row generates exactly `max_tokens`.

    # once, where the embedded model is installed: config + tokenizer files (about 3 MB)
    python -m judgegym.benchmarks.agent_throughput --save-assets assets/smollm2-135m
    # on a CUDA machine (bf16) and on this CPU (fp32), same episodes:
    python -m judgegym.benchmarks.agent_throughput --assets assets/smollm2-135m --batch 1 16 64

The asset helpers here (`save_assets`, `resolve_assets`, `random_model`, `save_random_model`)
also serve `train_throughput` and `trainer_vs_trl`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from pathlib import Path
from typing import Any


def save_assets(folder: Path) -> Path:
    """Write SmolLM2-135M-Instruct's config and tokenizer (from the embedded GGUF) to `folder`."""
    from ..models import load_local_model

    model, tokenizer = load_local_model("smollm2-135m-instruct")
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    tokenizer.save_pretrained(folder)
    return folder


TINY_CONFIG: dict[str, Any] = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
}
"""Config overrides that shrink a Llama-style model to a 2-layer, 64-wide toy (smoke runs)."""


def resolve_assets(assets: Path | None, scratch: Path) -> Path:
    """`assets` if given, else SmolLM2-135M's config and tokenizer written under `scratch`
    (needs the embedded model: the ``local`` extra)."""
    return assets if assets is not None else save_assets(scratch / "assets")


def random_model(assets: Path, device: str, dtype: str, **overrides: Any) -> tuple[Any, Any]:
    """A randomly initialised model with the config in `assets` (changed by `overrides`, e.g.
    `TINY_CONFIG`), and the real tokenizer. The weights are the same on every call."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(assets, **overrides)
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    return model.to(device).eval(), AutoTokenizer.from_pretrained(assets)


def save_random_model(assets: Path, folder: Path, dtype: str, **overrides: Any) -> Path:
    """`random_model` saved as a transformers folder (weights and tokenizer), for code that
    loads models by path, such as the GRPO trainer."""
    model, tokenizer = random_model(assets, "cpu", dtype, **overrides)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def measure(model: Any, tokenizer: Any, *, batch: int, episodes: int, max_tokens: int, device: str) -> dict[str, Any]:
    """Play `episodes` episodes with `batch` in flight; tokens/s inside generate."""
    from ..agents.hf import HFAgent
    from ..evaluation import evaluate

    agent = HFAgent("random", model_obj=model, tokenizer_obj=tokenizer, device=device, max_tokens=max_tokens, max_batch=batch)
    env_kwargs = {"split": "test", "prefetch_k": 2, "max_turns": 1}
    start = time.perf_counter()
    run = asyncio.run(evaluate("RagSupport-v0", agent, episodes=episodes, concurrency=batch, env_kwargs=env_kwargs))
    wall = time.perf_counter() - start
    completion = sum(t.metrics.get("completion_tokens", 0) for t in run.trajectories)
    prompt = sum(t.metrics.get("prompt_tokens", 0) for t in run.trajectories)
    return {
        "batch": batch,
        "episodes": len(run.trajectories),
        "failed": len(run.failed),
        "mean_batch": sum(agent.batch_sizes) / max(1, len(agent.batch_sizes)),
        "prompt_tokens_mean": prompt / max(1, len(run.trajectories)),
        "generated_tokens": int(completion),
        "generate_s": agent.generate_seconds,
        "wall_s": wall,
        "tokens_per_s": completion / agent.generate_seconds if agent.generate_seconds else 0.0,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--save-assets", type=Path, help="write SmolLM2-135M's config and tokenizer here and exit")
    parser.add_argument("--assets", type=Path, help="folder with config.json and the tokenizer files")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--episodes", type=int, nargs="+", help="episodes per batch size (default: 2 x batch, at least 4)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--dtype", default=None, help="default: bfloat16 on cuda, float32 on cpu")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.save_assets:
        print(f"assets written to {save_assets(args.save_assets)}")
        return
    if args.assets is None:
        parser.error("--assets is required (make it with --save-assets)")
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = args.dtype or ("bfloat16" if device == "cuda" else "float32")
    model, tokenizer = random_model(args.assets, device, dtype)
    hardware = (
        torch.cuda.get_device_name()
        if device == "cuda"
        else f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"
    )
    episodes = args.episodes or [max(4, 2 * b) for b in args.batch]
    if len(episodes) != len(args.batch):
        parser.error("give one --episodes value per --batch value")
    measure(model, tokenizer, batch=min(args.batch), episodes=min(args.batch), max_tokens=8, device=device)  # warm-up
    rows = []
    for batch, n in zip(args.batch, episodes, strict=True):
        row = measure(model, tokenizer, batch=batch, episodes=n, max_tokens=args.max_tokens, device=device)
        row.update(device=device, dtype=dtype, hardware=hardware, torch=torch.__version__)
        rows.append(row)
        print(
            f"batch {batch:>3}: {row['tokens_per_s']:8.1f} tokens/s  ({row['generated_tokens']} tokens in {row['generate_s']:.1f} s, "
            f"mean batch {row['mean_batch']:.1f}, prompts {row['prompt_tokens_mean']:.0f} tokens, {device} {dtype})",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
