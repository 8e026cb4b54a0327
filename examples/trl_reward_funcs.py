"""GRPO with TRL on RagSupport-v0, single turn: the top articles are in the prompt and the
env's verifier, through `JudgeReward`, is the reward function.

    python examples/trl_reward_funcs.py                                # SmolLM2-135M-Instruct, LoRA, CPU
    python examples/trl_reward_funcs.py --model Qwen/Qwen2.5-0.5B-Instruct --steps 100
"""

from __future__ import annotations

import argparse

import torch
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer

from judgegym.agents.hf import load_model
from judgegym.integrations.trl import RAG_SINGLE_TURN_PROMPT, JudgeReward, env_dataset
from judgegym.models import unmark_quantized


def main(argv: list[str] | None = None) -> GRPOTrainer:
    parser = argparse.ArgumentParser(description="GRPO with TRL on single-turn RagSupport-v0")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="embedded model name, model folder or hub id")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--scenarios", type=int, default=64, help="training scenarios (seeds 0 .. N-1)")
    parser.add_argument("--max-completion-length", type=int, default=160)
    parser.add_argument("--output-dir", default="runs/trl-reward-funcs")
    args = parser.parse_args(argv)

    model, tokenizer = load_model(args.model, torch.float32, fresh=True)
    unmark_quantized(model)  # the embedded model is loaded from GGUF: plain floats, but marked quantized
    # The two best-matching articles go into the question; a prompt without tool instructions.
    env_kwargs = {"prefetch_k": 2, "system_prompt": RAG_SINGLE_TURN_PROMPT, "max_tool_output_chars": 1500}
    dataset = env_dataset("RagSupport-v0", args.scenarios, split="train", **env_kwargs)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[JudgeReward("verifier", env_id="RagSupport-v0")],
        train_dataset=dataset,
        peft_config=LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]),
        args=GRPOConfig(
            output_dir=args.output_dir,
            max_steps=args.steps,
            per_device_train_batch_size=8,  # 2 prompts x 4 completions per step
            num_generations=4,
            max_completion_length=args.max_completion_length,
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
