"""Training throughput of judgegym's `GRPOTrainer` with the transformers backend: steps per
minute, seconds per step, generated tokens per second and peak memory (GPU memory on CUDA,
resident memory on a CPU), at a realistic batch by default (B=8 scenarios x G=8 members,
256 new tokens, micro-batches of 8).

The policy is a randomly initialised model with SmolLM2-135M's config and real tokenizer (as in
`agent_throughput`), trained in bf16 on CUDA and fp32 on a CPU, with a LoRA adapter (or all
weights with ``--full``, and whenever peft is not installed). Episodes are single-turn
RagSupport-v0 questions with ``prefetch_k`` articles in the prompt and no tools. A random model
scores 0 on every episode under the verifier, so no group would train; the reward here is
`AnswerHashJudge`, a hash of the answer text: meaningless as a reward, but every group has
reward variance, so every step runs a real backward pass and optimizer step. The figures
measure speed only.

    # once, where the embedded model is installed: config + tokenizer files (about 3 MB)
    python -m judgegym.benchmarks.train_throughput --save-assets assets/smollm2-135m
    # with an NVIDIA GPU (bf16):
    python -m judgegym.benchmarks.train_throughput --assets assets/smollm2-135m --json train-gpu.json
    # data-parallel on N GPUs (one line and one JSON per rank: steps/min, tokens/s, memory):
    torchrun --nproc-per-node N -m judgegym.benchmarks.train_throughput --assets assets/smollm2-135m --json train-gpu.json
    # a toy run on a CPU:
    python -m judgegym.benchmarks.train_throughput --tiny --scenarios 2 --group-size 2 --max-new-tokens 8 --steps 1
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..integrations.trl import RAG_SINGLE_TURN_PROMPT
from ..judges.base import JudgeScore, Verifier
from ..progress import peak_rss_mb
from ..trajectory import Trajectory

if TYPE_CHECKING:
    from ..judges.base import Judge
    from ..trainers import GRPOConfig


class AnswerHashJudge(Verifier):
    """Scores a trajectory by a hash of its assistant text: deterministic, spread over [0, 1)
    and meaningless as a reward.

    For throughput runs only: an untrained model scores 0 on every episode under a real
    judge, so its groups are flat and the trainer skips their update. Here two episodes with
    different text get different scores, so every group has reward variance and every step
    trains.
    """

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        text = "\n".join(m.content or "" for m in trajectory.messages if m.role == "assistant")
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        return JudgeScore(score=int.from_bytes(digest, "big") / 2**64, explanation="hash of the assistant text (throughput only)")


def single_turn_rag(prefetch_k: int) -> dict[str, Any]:
    """RagSupport-v0 keyword arguments for answer-only episodes: `prefetch_k` articles in the
    question, no tools offered (``max_tool_calls=0``) and the single-turn system prompt."""
    return {"max_tool_calls": 0, "prefetch_k": prefetch_k, "system_prompt": RAG_SINGLE_TURN_PROMPT}


def train_steps(config: GRPOConfig, judge: Judge | None = None) -> dict[str, Any]:
    """Build a `GRPOTrainer` for `config` and run its ``max_steps`` steps one by one.

    Returns ``steps``: one dict per step (``step_s`` wall time, with CUDA work finished;
    ``generate_s``, ``judge_s``, ``train_s`` from the trainer's timing; ``generated_tokens``,
    ``completion_mean_length``, ``prompt_tokens_mean``, ``trained_sequences``, ``reward``,
    ``frac_reward_zero_std``, ``seeds``), plus ``setup_s``, ``setup_peak_rss_mb`` (after the
    trainer is built), ``peak_rss_mb`` and, on CUDA, ``peak_gpu_allocated_gib`` and
    ``peak_gpu_reserved_gib`` (the peaks of the steps, model and optimizer included).
    """
    import torch

    from ..trainers import GRPOTrainer

    started = time.perf_counter()
    trainer = GRPOTrainer(config, judge=judge)
    cuda = trainer.device.startswith("cuda")
    result: dict[str, Any] = {"setup_s": time.perf_counter() - started, "setup_peak_rss_mb": peak_rss_mb()}
    if cuda:
        torch.cuda.synchronize(trainer.device)
        torch.cuda.reset_peak_memory_stats(trainer.device)
    steps = []
    for _ in range(config.max_steps):
        started = time.perf_counter()
        record = trainer.train_step()
        if cuda:
            torch.cuda.synchronize(trainer.device)
        elapsed = time.perf_counter() - started
        episodes = trainer.last_rollout
        steps.append(
            {
                "step_s": elapsed,
                "generate_s": record["timing/generate_s"],
                "judge_s": record["timing/judge_s"],
                "train_s": record["timing/train_s"],
                "generated_tokens": sum(e.tokens.num_sampled for e in episodes),
                "completion_mean_length": record["completions/mean_length"],
                "prompt_tokens_mean": statistics.fmean(len(e.tokens.prompt_ids) for e in episodes),
                "trained_sequences": record["num_trained_sequences"],
                "reward": record["reward"],
                "frac_reward_zero_std": record["frac_reward_zero_std"],
                "seeds": list(dict.fromkeys(e.seed for e in episodes)),
            }
        )
    result["steps"] = steps
    result["peak_rss_mb"] = peak_rss_mb()
    result["rank"], result["world_size"] = trainer.ranks.rank, trainer.ranks.world_size
    if cuda:
        result["peak_gpu_allocated_gib"] = torch.cuda.max_memory_allocated(trainer.device) / 2**30
        result["peak_gpu_reserved_gib"] = torch.cuda.max_memory_reserved(trainer.device) / 2**30
    trainer.close()
    return result


def summarize(steps: list[dict[str, Any]]) -> dict[str, float]:
    """Speed figures over measured steps: median seconds per step, steps per minute at that
    median, generated tokens per second of step time and of generation time alone."""
    if not steps:
        raise ValueError("no measured steps to summarize")
    median = statistics.median(s["step_s"] for s in steps)
    tokens = sum(s["generated_tokens"] for s in steps)
    return {
        "median_step_s": median,
        "steps_per_minute": 60.0 / median,
        "generated_tokens_per_s": tokens / sum(s["step_s"] for s in steps),
        "generation_tokens_per_s": tokens / sum(s["generate_s"] for s in steps),
        "median_generate_s": statistics.median(s["generate_s"] for s in steps),
        "median_train_s": statistics.median(s["train_s"] for s in steps),
        "completion_mean_length": statistics.fmean(s["completion_mean_length"] for s in steps),
        "prompt_tokens_mean": statistics.fmean(s["prompt_tokens_mean"] for s in steps),
    }


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--save-assets", type=Path, help="write SmolLM2-135M's config and tokenizer here and exit")
    parser.add_argument("--assets", type=Path, help="folder with config.json and the tokenizer files (default: the embedded model's)")
    parser.add_argument("--tiny", action="store_true", help="shrink the model to a 2-layer, 64-wide toy (smoke runs)")
    parser.add_argument("--full", action="store_true", help="train all weights instead of a LoRA adapter (automatic without peft)")
    parser.add_argument("--scenarios", type=int, default=8, help="B, scenarios per step (default: 8)")
    parser.add_argument("--group-size", type=int, default=8, help="G, episodes per scenario (default: 8)")
    parser.add_argument("--micro-batch-size", type=int, default=8, help="sequences per forward/backward (default: 8)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="sampled tokens per episode at most (default: 256)")
    parser.add_argument("--prefetch-k", type=int, default=2, help="articles in each prompt (default: 2)")
    parser.add_argument("--steps", type=int, default=5, help="measured steps (default: 5)")
    parser.add_argument("--warmup", type=int, default=1, help="steps run before the measured ones (default: 1)")
    parser.add_argument("--device", help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.save_assets:
        from .agent_throughput import save_assets

        print(f"assets written to {save_assets(args.save_assets)}")
        return None
    if min(args.scenarios, args.group_size, args.micro_batch_size, args.max_new_tokens, args.steps) < 1 or args.warmup < 0:
        parser.error("--scenarios, --group-size, --micro-batch-size, --max-new-tokens and --steps must be >= 1, --warmup >= 0")

    import torch
    import transformers

    from ..trainers import GRPOConfig
    from .agent_throughput import TINY_CONFIG, resolve_assets, save_random_model

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device.startswith("cuda")
    dtype = "bfloat16" if cuda else "float32"
    full = args.full or not _peft_installed()
    mode = "full" if full else "lora"
    if full and not args.full:
        print("peft is not installed: training all weights (full fine-tuning)", flush=True)
    with tempfile.TemporaryDirectory(prefix="train-throughput-") as scratch:
        assets = resolve_assets(args.assets, Path(scratch))
        model = save_random_model(assets, Path(scratch) / "model", dtype, **(TINY_CONFIG if args.tiny else {}))
        config = GRPOConfig(
            env_id="RagSupport-v0",
            env_kwargs=single_turn_rag(args.prefetch_k),
            model=str(model),
            device=device,
            dtype=dtype,
            use_lora=not full,
            scenarios_per_step=args.scenarios,
            group_size=args.group_size,
            micro_batch_size=args.micro_batch_size,
            max_new_tokens=args.max_new_tokens,
            max_turns=1,
            max_steps=args.warmup + args.steps,
            eval_steps=0,
            save_steps=0,
            output_dir=str(Path(scratch) / "run"),
        )
        run = train_steps(config, judge=AnswerHashJudge())
    cpu = f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"
    hardware = torch.cuda.get_device_name(device) if cuda else cpu
    result: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "device": device,
        "hardware": hardware,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dtype": dtype,
        "mode": mode,
        "model": "random weights, SmolLM2-135M config" + (" shrunk to a toy" if args.tiny else ""),
        "reward": "AnswerHashJudge: a hash of the answer text, for throughput only (not a learning signal)",
        "scenarios": args.scenarios,
        "group_size": args.group_size,
        "micro_batch_size": args.micro_batch_size,
        "max_new_tokens": args.max_new_tokens,
        "prefetch_k": args.prefetch_k,
        "warmup_steps": args.warmup,
        **summarize(run["steps"][args.warmup :]),
        **{k: v for k, v in run.items() if k != "steps"},
        "steps": run["steps"],
    }
    memory = (
        f"peak GPU memory {result['peak_gpu_allocated_gib']:.2f} GiB allocated, {result['peak_gpu_reserved_gib']:.2f} GiB reserved"
        if cuda
        else f"peak RSS {result['peak_rss_mb']:.0f} MiB"
    )
    ranks = f"rank {result['rank']} of {result['world_size']} (its B/{result['world_size']} groups), " if result["world_size"] > 1 else ""
    print(
        f"{ranks}{hardware}, {dtype}, {mode}: B={args.scenarios} G={args.group_size} micro={args.micro_batch_size} "
        f"max_new_tokens={args.max_new_tokens}, prompts {result['prompt_tokens_mean']:.0f} tokens\n"
        f"  {result['steps_per_minute']:.2f} steps/min ({result['median_step_s']:.2f} s/step median of {args.steps}; "
        f"generate {result['median_generate_s']:.2f} s, update {result['median_train_s']:.2f} s)\n"
        f"  {result['generated_tokens_per_s']:.1f} generated tokens/s of step time, {result['generation_tokens_per_s']:.1f} "
        f"in generation ({result['completion_mean_length']:.0f} tokens per episode)\n"
        f"  {memory}\n"
        "  reward: a hash of the answer text (throughput only, not a learning signal)",
        flush=True,
    )
    if args.json:
        out = args.json if result["world_size"] == 1 else args.json.with_suffix(f".rank{result['rank']}{args.json.suffix}")
        out.write_text(json.dumps(result, indent=2))
    return result


def _peft_installed() -> bool:
    return importlib.util.find_spec("peft") is not None


if __name__ == "__main__":
    main()
