"""Multi-turn rollouts with and without KV reuse across turns, on the real RagSupport-v0 with tools.

One run plays the same GRPO rollouts (B scenarios x G members, up to `--max-turns` turns,
sampled at temperature 1 with the same seeds) with `TransformersBackend` three ways:

- ``today``: every turn re-reads the whole conversation (``kv_reuse=False``), float32;
- ``reuse``: each episode's KV cache is kept across its turns, same dtype: the samples must be
  the same ids (``identical_samples``);
- ``fast``: everything the trainer does by default on this machine: KV reuse, sampling with a
  `GenerationCopy` of the policy (LoRA merged, bfloat16 where the CPU computes it natively:
  ``generation_dtype='auto'``); its samples differ (other rounding) and are not compared.

Then, with everything kept: the median seconds of GRPO steps (split into generation and
update) and one greedy held-out eval of `--eval-episodes` test scenarios, played the way the
trainers' held-out evals play (KV reuse, the generation copy), beside the same eval the old way
(the training model with its adapter unmerged, re-reading every conversation: ``eval_today_s``).

The policy is SmolLM2-135M-Instruct with a LoRA adapter: ``--adapter DIR`` (an SFT adapter, e.g.
``runs/demo-tools/sft/last`` from ``judgegym demo --task tools``), else one trained here on
oracle episodes (`--sft-episodes`, kept in ``--work/sft`` for the next run). The base model
does not call tools, so its episodes end after one turn and would show nothing of reuse.

    python -m judgegym.benchmarks.multiturn_rollouts --json multiturn.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from ..progress import peak_rss_mb
from ..trainers.device import native_bf16


def _adapter(args: argparse.Namespace) -> Path:
    """The SFT adapter to play with: the one given, the one a previous run left, or a new one."""
    if args.adapter is not None:
        return args.adapter
    folder = args.work / "sft"
    if (folder / "last" / "adapter_config.json").is_file():
        return folder / "last"
    from ..trainers.sft import SFTConfig, SFTTrainer
    from ..trainers.tools_demo import TOOLS_DEMO_ENV, ToolsDemoConfig, sft_data

    args.work.mkdir(parents=True, exist_ok=True)
    demo = ToolsDemoConfig(output_dir=str(args.work), sft_episodes=args.sft_episodes, max_turns=args.max_turns)
    data = sft_data(args.work / "sft-data.jsonl", demo)
    print(f"SFT adapter: {data['kept']} oracle episodes, {args.sft_epochs} epochs (kept in {folder} for later runs)", flush=True)
    SFTTrainer(
        SFTConfig(
            data=[data["file"]],
            model=demo.model,
            min_reward=demo.min_reward,
            env_id=TOOLS_DEMO_ENV,
            epochs=args.sft_epochs,
            learning_rate=demo.sft_learning_rate,
            warmup_steps=2,
            micro_batch_tokens=1600,
            gradient_accumulation_steps=2,
            mixed_precision="bf16" if native_bf16() else "no",
            save_steps=0,
            eval_episodes=0,
            output_dir=str(folder),
        )
    ).train()
    return folder / "last"


def _unmerged(model: Any, adapter: Path) -> Any:
    """`model` with the LoRA adapter at `adapter` loaded beside its weights (not merged)."""
    from peft import PeftModel

    from ..models.embedded import peft_quietly, unmark_quantized

    unmark_quantized(model)
    with peft_quietly():
        return PeftModel.from_pretrained(model, str(adapter)).eval()


def _play(backend: Any, tokenizer: Any, args: argparse.Namespace, seeds: list[int]) -> tuple[float, list[Any]]:
    """Seconds and episodes of one set of rollouts (fresh envs, the same seeds every time)."""
    from ..agents.batching import Sampling
    from ..trainers import make_envs, play_groups

    envs = make_envs("RagSupport-v0", len(seeds) * args.group_size, {"split": "train"}, max_turns=args.max_turns)
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=args.max_new_tokens, seed=args.seed)
    started = time.perf_counter()
    episodes = play_groups(backend, tokenizer, envs, seeds, sampling)
    seconds = time.perf_counter() - started
    for env in envs:
        env.close()
    return seconds, episodes


def _sampled(episode: Any) -> list[int]:
    tokens = episode.tokens
    return [t for t, m in zip(tokens.completion_ids, tokens.loss_mask, strict=True) if m]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", type=Path, help="an SFT LoRA adapter folder (default: train one, kept in --work)")
    parser.add_argument("--work", type=Path, default=Path("runs/bench-multiturn"), help="where the SFT adapter and GRPO run go")
    parser.add_argument("--sft-episodes", type=int, default=24, help="oracle episodes for the SFT adapter trained here (default: 24)")
    parser.add_argument("--sft-epochs", type=int, default=2, help="its epochs (default: 2)")
    parser.add_argument("--scenarios", type=int, default=2, help="B, scenarios per rollout (default: 2)")
    parser.add_argument("--group-size", type=int, default=4, help="G, episodes per scenario (default: 4)")
    parser.add_argument("--max-turns", type=int, default=4, help="turns per episode at most (default: 4)")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="tokens per turn at most (default: 128)")
    parser.add_argument("--grpo-steps", type=int, default=3, help="GRPO steps timed with everything kept (default: 3; 0: none)")
    parser.add_argument(
        "--grpo-mixed-precision",
        nargs="+",
        choices=["bf16", "no"],
        help="time GRPO steps with each of these (the first is 'grpo_step_s'; default: bf16 where native, else no)",
    )
    parser.add_argument("--gradient-checkpointing", action="store_true", help="GRPO steps with activation checkpointing (default: off)")
    parser.add_argument("--no-rollouts", action="store_true", help="skip the three-way rollout comparison")
    parser.add_argument("--eval-episodes", type=int, default=16, help="held-out scenarios of the eval (default: 16; 0: none)")
    parser.add_argument("--no-eval-today", action="store_true", help="skip the held-out eval that re-reads every conversation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    import torch

    from ..agents.generation_copy import GenerationCopy
    from ..agents.hf import HFAgent
    from ..evaluation import evaluate
    from ..judges.base import run_sync
    from ..models.embedded import load_model
    from ..trainers import TransformersBackend
    from ..trainers.device import resolve_generation_dtype

    adapter = _adapter(args)
    model, tokenizer = load_model("smollm2-135m", torch.float32, fresh=True)
    model = _unmerged(model, adapter)  # the policy as the trainer holds it: LoRA beside the base weights
    generation_dtype = resolve_generation_dtype("auto", "cpu", torch.float32)
    precisions = args.grpo_mixed_precision or ["bf16" if native_bf16() else "no"]
    result: dict[str, Any] = {
        "benchmark": "multiturn_rollouts",
        "machine": {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(), "native_bf16": native_bf16()},
        "setup": {
            "env": "RagSupport-v0 (tools, train split)",
            "model": f"smollm2-135m + {adapter}",
            "scenarios": args.scenarios,
            "group_size": args.group_size,
            "max_turns": args.max_turns,
            "max_new_tokens": args.max_new_tokens,
            "fast": f"KV reuse + a merged {str(generation_dtype or torch.float32).removeprefix('torch.')} generation copy",
            "grpo_mixed_precision": precisions[0],
            "grpo_gradient_checkpointing": args.gradient_checkpointing,
        },
    }
    if not args.no_rollouts:
        seeds = list(range(args.seed, args.seed + args.scenarios))
        runs: dict[str, tuple[float, list[Any]]] = {}
        backends = {
            "today": TransformersBackend(model, tokenizer, "cpu", kv_reuse=False),
            "reuse": TransformersBackend(model, tokenizer, "cpu"),
            "fast": TransformersBackend(model, tokenizer, "cpu", generation_dtype=generation_dtype or torch.float32),
        }
        for name, backend in backends.items():
            backend.sync_weights(model)  # no kept caches from the previous way
            runs[name] = _play(backend, tokenizer, args, seeds)
            sampled = sum(len(_sampled(e)) for e in runs[name][1])
            turns = statistics.mean(e.turns for e in runs[name][1])
            print(f"{name}: {runs[name][0]:.1f} s, {sampled} sampled tokens, {turns:.1f} turns per episode", flush=True)
        tokens_per_s = {name: sum(len(_sampled(e)) for e in episodes) / seconds for name, (seconds, episodes) in runs.items()}
        identical = [_sampled(e) for e in runs["today"][1]] == [_sampled(e) for e in runs["reuse"][1]]
        stats = backends["reuse"].prefix_cache.stats if backends["reuse"].prefix_cache is not None else None
        result |= {
            "turns_per_episode": statistics.mean(e.turns for e in runs["today"][1]),
            "rollout_s": {name: seconds for name, (seconds, _) in runs.items()},
            "tokens_per_s": tokens_per_s,
            "reuse_speedup": tokens_per_s["reuse"] / tokens_per_s["today"],
            "speedup": tokens_per_s["fast"] / tokens_per_s["today"],
            "identical_samples": identical,
            "reused_prompt_share": stats.reuse_share if stats else 0.0,
        }
        del backends, runs

    for precision in precisions if args.grpo_steps else []:
        from ..trainers import GRPOConfig, GRPOTrainer

        config = GRPOConfig(
            env_id="RagSupport-v0",
            model="smollm2-135m",
            init_adapter=str(adapter),
            judge="0.8*verifier+0.2*grounding",
            scenarios_per_step=args.scenarios,
            group_size=args.group_size,
            micro_batch_size=1,
            gradient_checkpointing=args.gradient_checkpointing,
            mixed_precision=precision,
            temperature=1.0,
            max_turns=args.max_turns,
            max_new_tokens=args.max_new_tokens,
            max_steps=args.grpo_steps,
            eval_steps=0,
            save_steps=0,
            seed=args.seed,
            output_dir=str(args.work / f"grpo-{precision}-{int(time.time())}"),
        )
        trainer = GRPOTrainer(config)
        try:
            records = trainer.train()
        finally:
            trainer.close()
        timed = {
            "median": statistics.median(r["step_time_s"] for r in records),
            "generate": statistics.median(r["timing/generate_s"] for r in records),
            "update": statistics.median(r["timing/train_s"] for r in records),
            "steps": len(records),
            "logp_difference_max": max(r.get("sampling/sampling_logp_difference/max", 0.0) for r in records),
        }
        result.setdefault("grpo_step_s", timed)
        result.setdefault("grpo_step_s_by_mixed_precision", {})[precision] = timed
        print(f"GRPO ({precision}): {timed}", flush=True)

    if args.eval_episodes:
        evals = {"eval_s": True} if args.no_eval_today else {"eval_s": True, "eval_today_s": False}
        for key, fast in evals.items():
            player = GenerationCopy(model, generation_dtype).model if fast and generation_dtype is not None else model
            agent = HFAgent(model_obj=player, tokenizer_obj=tokenizer, device="cpu", max_tokens=args.max_new_tokens, kv_reuse=fast)
            started = time.perf_counter()
            run = run_sync(
                evaluate(
                    "RagSupport-v0",
                    agent,
                    episodes=args.eval_episodes,
                    concurrency=args.eval_episodes,
                    env_kwargs={"split": "test", "max_turns": args.max_turns},
                )
            )
            result[key] = time.perf_counter() - started
            result[key.replace("_s", "_reward")] = statistics.mean(t.reward or 0.0 for t in run.trajectories)
            agent.close()
            print(f"held-out eval ({'fast' if fast else 'today'}): {result[key]:.1f} s", flush=True)
    result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


__all__ = ["main"]


if __name__ == "__main__":
    main()
