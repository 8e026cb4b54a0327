"""judgegym's `GRPOTrainer` against TRL's ``GRPOTrainer`` on a CPU, one setup for both: seconds
per step, seconds per generated token and peak resident memory, each as a ratio judgegym / TRL
(targets: at most 0.8x TRL's step time, no more memory).

    python -m judgegym.benchmarks.trainer_vs_trl --json trainer-vs-trl.json
    python -m judgegym.benchmarks.trainer_vs_trl --tiny --steps 2          # a smoke run, seconds

Each trainer runs in its own process, started from this small one, so each peak RSS is its
own (a child's ``ru_maxrss`` starts at its parent's peak at the spawn). A third process first
writes the model as a plain safetensors folder, which both load with the same
`judgegym.agents.hf.load_model` call (no GGUF dequantisation in either peak). With
``--repeats 2`` the second round runs the trainers in the other order. The first step of every
run is a warm-up and left out of the medians; every step's figures are in the JSON.

The setup is one `judgegym.trainers.GRPOConfig` (`judgegym_config`), translated for TRL by
`trl_arguments`. What both get:

- model: SmolLM2-135M-Instruct (``--model``: any transformers folder; ``--tiny``: a toy with
  SmolLM2's tokenizer, or the one in ``--assets``), fp32 on the CPU, with the same LoRA adapter (r 16, alpha 32, dropout
  0, every attention and MLP projection); TRL gets the loaded model object and
  ``peft_config``, and the tokenizer padding on the left;
- data: RagSupport-v0 train-split scenarios in the same order (TRL: rows of
  `judgegym.integrations.trl.env_dataset` from the trainer's own first scenario seed,
  ``shuffle_dataset=False``), answer-only (``max_tool_calls=0``, no tools offered),
  ``prefetch_k`` articles in the prompt, the single-turn system prompt; judgegym plays one
  turn (``max_turns=1``). Each run records the seeds it played and a mismatch is an error;
- reward: the RagSupport verifier (`JudgeReward` for TRL; ``--judge hash``: `AnswerHashJudge`);
- batch: B scenarios x G completions sampled once per optimizer step, trained in micro-batches
  of ``--micro-batch-size``. In TRL: ``num_generations=G``, ``per_device_train_batch_size`` =
  the micro-batch, ``gradient_accumulation_steps = steps_per_generation = B*G / micro``
  (``steps_per_generation`` counts micro-batches, so this is one generation per optimizer
  step), ``num_iterations=1``;
- sampling: ``max_new_tokens`` / ``max_completion_length``, temperature, ``top_p=1``,
  ``top_k=0`` (off), ``min_p`` none, ``repetition_penalty=1``, the model's ``generate`` (TRL:
  ``use_vllm=False``, no continuous batching);
- loss: ``loss_type="dapo"``, ``beta=0``, ``epsilon=0.2``, group-scaled advantages,
  token-level ratios, truncated completions trained (TRL: ``mask_truncated_completions=False``),
  every token (``top_entropy_quantile=1``), no entropy bonus;
- optimizer: ``torch.optim.AdamW`` with betas (0.9, 0.999) and eps 1e-8 (TRL:
  ``optim="adamw_torch"``; its default is the fused variant), learning rate 1e-4, weight decay
  0, no warmup, a constant schedule (``lr_scheduler_type="constant_with_warmup"`` with 0 warmup
  steps, as judgegym builds it; TRL's default is linear decay), gradient norm clipped to 1.0;
- run: ``gradient_checkpointing=False`` (TRL's default is True), ``bf16=False`` (TRL's default
  is True) and judgegym's ``mixed_precision="no"``, ``generation_dtype="training"`` (with
  ``--precision bf16``: bf16 autocast in both and judgegym's bf16 generation copy),
  ``use_cpu=True``, ``use_liger_kernel=False``, ``cast_lm_head_to_fp32=False``,
  ``disable_dropout=False`` (the model's and LoRA's dropout are 0), no eval, no checkpoints
  (TRL: ``save_strategy="no"``, judgegym: ``save_steps=0``, ``eval_steps=0``), TRL
  ``report_to="none"``, ``log_completions=False``, ``logging_steps=1`` (outside the timed
  part), the same seed, and ``--threads`` threads in both (``torch.set_num_threads`` and
  ``OMP_NUM_THREADS``; default: every core).

Differences that remain, by design of each trainer: judgegym skips the update of groups whose
rewards are all equal (their gradient is zero), TRL runs the forward and backward pass on
them; TRL computes log-probabilities with a chunked fused LM head, judgegym keeps the logits
from the shortest prompt's end; the samples differ (each trainer seeds its own sampling), so
completion lengths are reported per step, and the time per generated token is a second ratio.
Step time: judgegym's whole `train_step`; TRL's from ``on_step_begin`` to ``on_step_end``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .train_throughput import AnswerHashJudge, peak_rss_mb, single_turn_rag, train_steps

if TYPE_CHECKING:
    from ..judges.base import Judge
    from ..trainers import GRPOConfig

ENV_ID = "RagSupport-v0"

TARGETS = {"step_time": 0.8, "peak_rss": 1.0}
"""Most a ratio judgegym / TRL may be."""

TRAINERS = ("judgegym", "trl")


@dataclass
class Setup:
    """What both trainers are given (JSON-able: it travels to the child processes)."""

    model: str
    """A transformers folder."""
    scenarios: int = 2
    group_size: int = 4
    micro_batch_size: int = 4
    max_new_tokens: int = 64
    temperature: float = 1.0
    steps: int = 5
    prefetch_k: int = 1
    judge: Literal["verifier", "hash"] = "verifier"
    precision: Literal["fp32", "bf16"] = "fp32"
    """``fp32``: both trainers in float32 throughout. ``bf16``: both use bf16 autocast for the update
    (TRL ``bf16=True``; judgegym ``mixed_precision="bf16"``), and judgegym samples from its bf16
    generation copy (``generation_dtype="auto"``), as its defaults do on a CPU with native bf16."""
    seed: int = 0
    threads: int = 1


def judgegym_config(setup: Setup, output_dir: str | os.PathLike[str]) -> GRPOConfig:
    """The run as a judgegym `GRPOConfig`; every field not set here keeps its default (LoRA r 16,
    alpha 32, learning rate 1e-4, dapo, beta 0, ...), which `trl_arguments` carries over."""
    from ..trainers import GRPOConfig

    return GRPOConfig(
        env_id=ENV_ID,
        env_kwargs={"split": "train", **single_turn_rag(setup.prefetch_k)},
        model=setup.model,
        dtype="float32",
        device="cpu",
        mixed_precision="bf16" if setup.precision == "bf16" else "no",
        generation_dtype="auto" if setup.precision == "bf16" else "training",
        gradient_checkpointing=False,
        scenarios_per_step=setup.scenarios,
        group_size=setup.group_size,
        micro_batch_size=setup.micro_batch_size,
        max_new_tokens=setup.max_new_tokens,
        max_turns=1,
        temperature=setup.temperature,
        top_p=1.0,
        max_steps=setup.steps,
        eval_steps=0,
        save_steps=0,
        seed=setup.seed,
        output_dir=str(output_dir),
    )


def trl_arguments(config: GRPOConfig, output_dir: str | os.PathLike[str]) -> tuple[Any, Any]:
    """TRL's ``GRPOConfig`` and the peft ``LoraConfig`` for the run `config` describes (CPU,
    fp32, one generation of B x G completions per optimizer step)."""
    from trl import GRPOConfig as TRLConfig

    completions = config.scenarios_per_step * config.group_size
    if completions % config.micro_batch_size:
        raise ValueError(f"B x G = {completions} completions must split into micro-batches of {config.micro_batch_size}")
    accumulation = completions // config.micro_batch_size
    args = TRLConfig(
        output_dir=str(output_dir),
        num_generations=config.group_size,
        per_device_train_batch_size=config.micro_batch_size,
        gradient_accumulation_steps=accumulation,
        steps_per_generation=accumulation,
        num_iterations=1,
        max_steps=config.max_steps,
        shuffle_dataset=False,
        max_completion_length=config.max_new_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=0,
        min_p=None,
        repetition_penalty=1.0,
        use_vllm=False,
        use_transformers_continuous_batching=False,
        beta=config.beta,
        loss_type=config.loss_type,
        epsilon=config.epsilon,
        epsilon_high=config.epsilon_high,
        scale_rewards=config.scale_rewards,
        importance_sampling_level="token",
        mask_truncated_completions=False,
        top_entropy_quantile=1.0,
        entropy_coef=0.0,
        learning_rate=config.effective_learning_rate,
        optim="adamw_torch",
        weight_decay=config.weight_decay,
        lr_scheduler_type="constant_with_warmup" if config.lr_scheduler == "constant" else config.lr_scheduler,
        warmup_steps=config.warmup_steps,
        max_grad_norm=config.max_grad_norm,
        use_cpu=True,
        bf16=config.mixed_precision == "bf16",
        fp16=False,
        gradient_checkpointing=config.gradient_checkpointing,
        use_liger_kernel=False,
        cast_lm_head_to_fp32=False,
        disable_dropout=False,
        seed=config.seed,
        logging_steps=1,
        log_completions=False,
        report_to="none",
        save_strategy="no",
        eval_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    return args, config.lora_config()


_REPORTED_TRL_ARGUMENTS = frozenset(  # the TRL settings a run records
    "num_generations per_device_train_batch_size gradient_accumulation_steps steps_per_generation generation_batch_size "
    "num_iterations max_steps shuffle_dataset max_completion_length temperature top_p top_k min_p repetition_penalty use_vllm "
    "beta loss_type epsilon epsilon_high scale_rewards importance_sampling_level mask_truncated_completions "
    "top_entropy_quantile learning_rate optim weight_decay lr_scheduler_type warmup_steps max_grad_norm use_cpu bf16 fp16 "
    "gradient_checkpointing use_liger_kernel cast_lm_head_to_fp32 disable_dropout seed".split()
)


def compare(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Summaries per trainer over the steps after each run's first, the ratios judgegym / TRL
    and whether they meet `TARGETS`; notes for what a reader should weigh. Raises ValueError if
    the trainers played different scenarios."""
    played = {trainer: [[s["seeds"] for s in run["steps"]] for run in runs if run["trainer"] == trainer] for trainer in TRAINERS}
    if any(not played[t] for t in TRAINERS):
        raise ValueError(f"need runs of both trainers, got {sorted({run['trainer'] for run in runs})}")
    if len({json.dumps(p) for t in TRAINERS for p in played[t]}) != 1:
        raise ValueError(f"the trainers played different scenarios (seeds per step): {played}")
    summary = {}
    for trainer in TRAINERS:
        trainer_runs = [run for run in runs if run["trainer"] == trainer]
        steps = [step for run in trainer_runs for step in run["steps"][1:]]
        if not steps:
            raise ValueError("every run needs at least 2 steps: the first is a warm-up")
        summary[trainer] = {
            "median_step_s": statistics.median(s["step_s"] for s in steps),
            "s_per_generated_token": sum(s["step_s"] for s in steps) / max(1, sum(s["generated_tokens"] for s in steps)),
            "peak_rss_mb": max(run["peak_rss_mb"] for run in trainer_runs),
            "setup_peak_rss_mb": max(run["setup_peak_rss_mb"] for run in trainer_runs),
            "median_generate_s": _median_or_none(s["generate_s"] for s in steps),
            "median_judge_s": _median_or_none(s["judge_s"] for s in steps),
            "completion_mean_length": statistics.fmean(s["completion_mean_length"] for s in steps),
            "prompt_tokens_mean": statistics.fmean(s["prompt_tokens_mean"] for s in steps),
            "reward_mean": _mean_or_none(s["reward"] for s in steps),
            "steps_without_update": sum(s["trained_sequences"] == 0 for s in steps),
            "measured_steps": len(steps),
        }
    ours, theirs = summary["judgegym"], summary["trl"]
    ratios = {
        "step_time": ours["median_step_s"] / theirs["median_step_s"],
        "time_per_generated_token": ours["s_per_generated_token"] / theirs["s_per_generated_token"],
        "peak_rss": ours["peak_rss_mb"] / theirs["peak_rss_mb"],
    }
    notes = []
    if ours["steps_without_update"]:
        notes.append(
            f"judgegym skipped the update on {ours['steps_without_update']} of {ours['measured_steps']} measured steps "
            "(every group's rewards were equal); TRL runs forward and backward on such groups. Compare the generate times, "
            "or use --judge hash for steps that always train"
        )
    if abs(ours["prompt_tokens_mean"] - theirs["prompt_tokens_mean"]) > 0.5:
        notes.append(f"prompt lengths differ: {ours['prompt_tokens_mean']:.1f} vs {theirs['prompt_tokens_mean']:.1f} tokens")
    return {
        "summary": summary,
        "ratios": ratios,
        "targets": TARGETS,
        "meets_targets": {name: ratios[name] <= target for name, target in TARGETS.items()},
        "notes": notes,
    }


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m", help="embedded model, transformers folder or hub id (default: smollm2-135m)")
    parser.add_argument("--tiny", action="store_true", help="a 2-layer, 64-wide random model with SmolLM2's tokenizer (smoke runs)")
    parser.add_argument("--assets", type=Path, help="with --tiny: config and tokenizer folder (default: the embedded model's)")
    parser.add_argument("--steps", type=int, default=5, help="optimizer steps per run, the first a warm-up (default: 5)")
    parser.add_argument("--scenarios", type=int, default=2, help="B, scenarios per step (default: 2)")
    parser.add_argument("--group-size", type=int, default=4, help="G, completions per scenario (default: 4)")
    parser.add_argument("--micro-batch-size", type=int, default=4, help="sequences per forward/backward (default: 4)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="sampled tokens per completion at most (default: 64)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--prefetch-k", type=int, default=1, help="articles in each prompt (default: 1)")
    parser.add_argument("--judge", choices=("verifier", "hash"), default="verifier", help="the RagSupport verifier or AnswerHashJudge")
    parser.add_argument(
        "--precision", choices=("fp32", "bf16"), default="fp32", help="fp32 throughout, or bf16 autocast in both (default: fp32)"
    )
    parser.add_argument("--threads", type=int, default=_cores(), help=f"torch threads in each run (default: every core, {_cores()})")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of both runs; every second round runs TRL first (default: 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "IN", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _run_child(*args.child)
        return None
    if args.steps < 2:
        parser.error("--steps must be >= 2: the first step of each run is a warm-up")
    if args.group_size < 2:
        parser.error("--group-size must be >= 2 (TRL's minimum)")
    if min(args.scenarios, args.micro_batch_size, args.max_new_tokens, args.threads, args.repeats) < 1:
        parser.error("--scenarios, --micro-batch-size, --max-new-tokens, --threads and --repeats must be >= 1")
    if (args.scenarios * args.group_size) % args.micro_batch_size:
        parser.error(f"B x G = {args.scenarios * args.group_size} must be a multiple of --micro-batch-size")

    with tempfile.TemporaryDirectory(prefix="trainer-vs-trl-") as scratch_dir:
        scratch = Path(scratch_dir)
        model = args.model
        if args.tiny or not Path(model).is_dir():
            model = str(scratch / "model")
            spec = {"model": args.model, "tiny": args.tiny, "assets": args.assets and str(args.assets), "folder": model}
            _spawn("prepare", spec, scratch, args.threads)
        setup = Setup(
            model=model,
            scenarios=args.scenarios,
            group_size=args.group_size,
            micro_batch_size=args.micro_batch_size,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            steps=args.steps,
            prefetch_k=args.prefetch_k,
            judge=args.judge,
            precision=args.precision,
            seed=args.seed,
            threads=args.threads,
        )
        runs = []
        for round_ in range(args.repeats):
            for trainer in TRAINERS if round_ % 2 == 0 else TRAINERS[::-1]:
                print(f"-- round {round_ + 1}: {trainer}", flush=True)
                runs.append({"trainer": trainer, "round": round_, **_spawn(trainer, asdict(setup), scratch, args.threads)})
    result = {
        "date": datetime.date.today().isoformat(),
        "hardware": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(), "cores": _cores()},
        "setup": {**asdict(setup), "model": "tiny random model" if args.tiny else args.model, "repeats": args.repeats},
        "orchestrator_peak_rss_mb": peak_rss_mb(),
    }
    try:
        result.update(compare(runs))
    finally:  # the runs took long: keep them even when they cannot be compared
        result["runs"] = runs
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str))
    _print(result)
    return result


# -- child processes --------------------------------------------------------------------------


def _spawn(kind: str, spec: dict[str, Any], scratch: Path, threads: int) -> dict[str, Any]:
    """Run `kind` in a fresh interpreter with `threads` threads; returns what it wrote."""
    spec_path, out_path = scratch / f"{kind}-in.json", scratch / f"{kind}-out.json"
    spec_path.write_text(json.dumps(spec))
    out_path.unlink(missing_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    command = [sys.executable, "-m", "judgegym.benchmarks.trainer_vs_trl", "--child", kind, str(spec_path), str(out_path)]
    completed = subprocess.run(command, env=env, check=False)
    if completed.returncode != 0 or not out_path.exists():
        raise RuntimeError(f"the {kind} process failed (exit status {completed.returncode}); its output is above")
    return {**json.loads(out_path.read_text()), "wall_s": time.perf_counter() - started}


def _run_child(kind: str, spec_path: str, out_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    if kind == "prepare":
        result = _prepare(**spec)
    else:
        import torch

        setup = Setup(**spec)
        torch.set_num_threads(setup.threads)
        with tempfile.TemporaryDirectory(prefix=f"{kind}-run-") as scratch:
            result = _run_judgegym(setup, Path(scratch)) if kind == "judgegym" else _run_trl(setup, Path(scratch))
        result["threads"] = torch.get_num_threads()
    Path(out_path).write_text(json.dumps(result, default=str))


def _prepare(model: str, tiny: bool, assets: str | None, folder: str) -> dict[str, Any]:
    """Write the model both trainers load: a toy random one, or `model` as a plain folder."""
    if tiny:
        from .agent_throughput import TINY_CONFIG, resolve_assets, save_random_model

        scratch = Path(folder).parent
        save_random_model(resolve_assets(assets and Path(assets), scratch), Path(folder), "float32", **TINY_CONFIG)
        return {"folder": folder}
    import torch

    from ..models import load_model, unmark_quantized

    loaded, tokenizer = load_model(model, torch.float32, fresh=True)
    unmark_quantized(loaded)  # saved as plain weights, not as a GGUF-quantized model
    loaded.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return {"folder": folder}


def _judge(setup: Setup) -> Judge:
    if setup.judge == "hash":
        return AnswerHashJudge()
    from ..judges.specs import make_judge

    return make_judge("verifier", env_id=ENV_ID)


def _run_judgegym(setup: Setup, scratch: Path) -> dict[str, Any]:
    import torch
    import transformers

    result = train_steps(judgegym_config(setup, scratch / "run"), judge=_judge(setup))
    return {**result, "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}


def _run_trl(setup: Setup, scratch: Path) -> dict[str, Any]:
    import peft
    import torch
    import transformers
    import trl
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOTrainer as TRLTrainer

    from ..integrations.trl import JudgeReward, env_dataset
    from ..models import load_model, unmark_quantized
    from ..trainers.grpo import scenario_seeds

    config = judgegym_config(setup, scratch / "unused")
    args, lora = trl_arguments(config, scratch / "run")
    model, tokenizer = load_model(config.model, torch.float32, fresh=True)  # as judgegym's trainer loads it
    unmark_quantized(model)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    # judgegym's scenario seeds for the run (the method reads only config.seed), as dataset rows
    first_seed = scenario_seeds(config.seed, 0, 1)[0]
    dataset = env_dataset(ENV_ID, setup.scenarios * setup.steps, first_seed=first_seed, **config.env_kwargs)
    trainer = TRLTrainer(
        model=model,
        reward_funcs=[JudgeReward(_judge(setup), env_id=ENV_ID)],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
    )
    trainer.remove_callback(PrinterCallback)  # judgegym's steps print nothing either
    probe = _probe(trainer)
    result: dict[str, Any] = {"setup_peak_rss_mb": peak_rss_mb()}
    trainer.train()
    result["steps"] = probe.steps(setup.scenarios * setup.group_size)
    result["peak_rss_mb"] = peak_rss_mb()
    result["trl_arguments"] = {key: getattr(args, key) for key in sorted(args.to_dict()) if key in _REPORTED_TRL_ARGUMENTS}
    result["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__}
    result["versions"]["peft"] = peft.__version__
    return result


def _probe(trainer: Any) -> Any:
    """A callback added to TRL's `trainer` that times its optimizer steps (``on_step_begin`` to
    ``on_step_end``) and, by wrapping them on the instance, its generation and reward calls;
    it keeps each step's logged metrics. ``probe.steps(n)`` returns the per-step figures."""
    from transformers import TrainerCallback

    class StepProbe(TrainerCallback):
        def __init__(self) -> None:
            self.step_s: list[float] = []
            self.generate_s: list[float] = []
            self.judge_s: list[float] = []
            self.prompt_tokens: list[float] = []
            self.seeds: list[list[int]] = []
            self.logs: list[dict[str, float]] = []
            self._started = 0.0

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self._started = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            self.step_s.append(time.perf_counter() - self._started)

        def on_log(self, *args: Any, logs: dict[str, float] | None = None, **kwargs: Any) -> None:
            if logs and "completions/mean_length" in logs:
                self.logs.append(dict(logs))

        def steps(self, completions: int) -> list[dict[str, Any]]:
            counts = [len(self.step_s), len(self.generate_s), len(self.judge_s), len(self.logs)]
            if len(set(counts)) != 1:
                raise RuntimeError(
                    f"TRL ran {counts[0]} steps, {counts[1]} generations and {counts[2]} reward calls, and logged {counts[3]} "
                    "times; expected one of each per step (one generation per optimizer step)"
                )
            rows = zip(self.step_s, self.generate_s, self.judge_s, self.prompt_tokens, self.seeds, self.logs, strict=True)
            return [
                {
                    "step_s": step_s,
                    "generate_s": generate_s,
                    "judge_s": judge_s,
                    "train_s": step_s - generate_s - judge_s,
                    "generated_tokens": logs["completions/mean_length"] * completions,
                    "completion_mean_length": logs["completions/mean_length"],
                    "prompt_tokens_mean": prompt_tokens,
                    "trained_sequences": completions,  # TRL's loss covers every completion, flat groups too
                    "reward": logs["reward"],
                    "frac_reward_zero_std": logs["frac_reward_zero_std"],
                    "seeds": seeds,
                }
                for step_s, generate_s, judge_s, prompt_tokens, seeds, logs in rows
            ]

    probe = StepProbe()
    generate, rewards = trainer._generate, trainer._calculate_rewards

    def timed_generate(prompts: Any) -> Any:
        started = time.perf_counter()
        output = generate(prompts)
        probe.generate_s.append(time.perf_counter() - started)
        probe.prompt_tokens.append(statistics.fmean(len(ids) for ids in output[0]))
        return output

    def timed_rewards(inputs: Any, *rest: Any) -> Any:
        started = time.perf_counter()
        output = rewards(inputs, *rest)
        probe.judge_s.append(time.perf_counter() - started)
        probe.seeds.append(list(dict.fromkeys(int(row["seed"]) for row in inputs)))
        return output

    trainer._generate, trainer._calculate_rewards = timed_generate, timed_rewards
    trainer.add_callback(probe)
    return probe


# -- helpers ----------------------------------------------------------------------------------


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _median_or_none(values: Any) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _mean_or_none(values: Any) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def _print(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    summary, ratios, targets = result["summary"], result["ratios"], result["targets"]
    ours, theirs = summary["judgegym"], summary["trl"]
    setup = result["setup"]
    table = Table(
        title=f"GRPO step on {setup['model']}: B={setup['scenarios']} G={setup['group_size']} micro={setup['micro_batch_size']} "
        f"max_new_tokens={setup['max_new_tokens']}, {setup['threads']} threads, {result['date']}"
    )
    for column in ("", "judgegym", "TRL", "judgegym / TRL", "target"):
        table.add_column(column, justify="left" if not column else "right")
    rows = [
        ("s per step (median after warm-up)", "median_step_s", "{:.2f}", "step_time"),
        ("ms per generated token", "s_per_generated_token", "{:.1f}", "time_per_generated_token"),
        ("peak RSS (MiB)", "peak_rss_mb", "{:.0f}", "peak_rss"),
        ("RSS after setup (MiB)", "setup_peak_rss_mb", "{:.0f}", None),
        ("generate s (median)", "median_generate_s", "{:.2f}", None),
        ("completion tokens (mean)", "completion_mean_length", "{:.1f}", None),
        ("prompt tokens (mean)", "prompt_tokens_mean", "{:.1f}", None),
        ("reward (mean)", "reward_mean", "{:.3f}", None),
        ("steps without update", "steps_without_update", "{}", None),
    ]
    for label, key, fmt, ratio in rows:
        cells = [
            fmt.format(side[key] * (1000 if key == "s_per_generated_token" else 1)) if side[key] is not None else "-"
            for side in (ours, theirs)
        ]
        table.add_row(label, *cells, f"{ratios[ratio]:.2f}x" if ratio else "", f"<= {targets[ratio]}x" if ratio in targets else "")
    console = Console()
    console.print(table)
    for run in result["runs"]:
        times = ", ".join(f"{s['step_s']:.2f}" for s in run["steps"])
        console.print(f"{run['trainer']:>9} round {run['round'] + 1}: step times {times} s")
    for note in result["notes"]:
        console.print(f"note: {note}")


if __name__ == "__main__":
    main()
