"""GRPO with TRL on a multi-turn judgegym env: `environment_factory` gives the model the env's
tools (and, for CustomerSupport-v0, `reply_to_customer`); `JudgeReward` scores each finished
episode with the env's verifier.

    python examples/trl_environment.py                                 # RagSupport-v0, SmolLM2-135M-Instruct
    python examples/trl_environment.py --env CustomerSupport-v0 --model Qwen/Qwen2.5-0.5B-Instruct
"""

from __future__ import annotations

import argparse

import torch
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

from judgegym.agents.hf import load_model
from judgegym.integrations.trl import JudgeReward, env_dataset, environment_factory
from judgegym.models import unmark_quantized


def main(argv: list[str] | None = None) -> GRPOTrainer:
    parser = argparse.ArgumentParser(description="GRPO with TRL on a multi-turn judgegym env")
    parser.add_argument("--env", default="RagSupport-v0", choices=["RagSupport-v0", "CustomerSupport-v0"])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="embedded model name, model folder or hub id")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--scenarios", type=int, default=64, help="training scenarios (seeds 0 .. N-1)")
    parser.add_argument("--max-completion-length", type=int, default=1024, help="tokens per rollout, tool results included")
    parser.add_argument("--output-dir", default="runs/trl-environment")
    args = parser.parse_args(argv)

    model, tokenizer = load_model(args.model, torch.float32, fresh=True)
    unmark_quantized(model)
    if not supports_tool_calling(tokenizer):
        # SmolLM2's template cannot show tools; it speaks ChatML, so Qwen2.5's ChatML template with
        # Hermes <tool_call> blocks fits its special tokens, and TRL knows how to parse it.
        tokenizer.chat_template = qwen2_5_chat_template
    env_kwargs = {"split": "train"}  # the same for the dataset and the environments
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[JudgeReward("verifier", env_id=args.env)],
        train_dataset=env_dataset(args.env, args.scenarios, **env_kwargs),
        environment_factory=environment_factory(args.env, **env_kwargs),
        peft_config=LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]),
        args=GRPOConfig(
            output_dir=args.output_dir,
            max_steps=args.steps,
            per_device_train_batch_size=8,  # 2 prompts x 4 rollouts per step
            num_generations=4,
            max_completion_length=args.max_completion_length,
            max_tool_calling_iterations=8,
            learning_rate=2e-5,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            activation_checkpointing=True,  # TRL's default, under transformers 5's name
            use_cpu=not torch.cuda.is_available(),
            bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
        ),
    )
    trainer.train()
    return trainer


if __name__ == "__main__":
    main()
