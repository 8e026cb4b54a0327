"""GRPO for judgegym envs: the trainer (`GRPOTrainer`, `GRPOConfig`), supervised fine-tuning on
judged trajectories (`SFTTrainer`, `SFTConfig`), the rollout backends,
checkpoints, and the pure pieces it is built from (advantages, loss, token-level episodes).

Importing this package imports torch; transformers and peft load when a trainer is built, vLLM
when a `VLLMBackend` is.
"""

from .advantages import GroupAdvantages, group_advantages
from .checkpoint import TrainerState, latest_checkpoint, load_checkpoint, save_checkpoint
from .grpo import DEFAULT_LORA_TARGETS, GRPOConfig, GRPOTrainer, plot_rewards, scenario_seeds
from .loss import importance_sampling_weights, policy_loss, selective_log_softmax
from .rollout import RolloutBackend, RolloutEpisode, TransformersBackend, make_envs, play_groups
from .sft import SFTConfig, SFTTrainer, read_sft_records, tokenize_trajectory
from .tokenize import EpisodeTokenizer, TemplateError, TokenTrajectory, env_turns
from .vllm_rollout import VLLMBackend

__all__ = [
    "DEFAULT_LORA_TARGETS",
    "EpisodeTokenizer",
    "GRPOConfig",
    "GRPOTrainer",
    "GroupAdvantages",
    "RolloutBackend",
    "SFTConfig",
    "SFTTrainer",
    "RolloutEpisode",
    "TemplateError",
    "TokenTrajectory",
    "TrainerState",
    "TransformersBackend",
    "VLLMBackend",
    "env_turns",
    "group_advantages",
    "importance_sampling_weights",
    "latest_checkpoint",
    "load_checkpoint",
    "make_envs",
    "play_groups",
    "plot_rewards",
    "policy_loss",
    "read_sft_records",
    "save_checkpoint",
    "scenario_seeds",
    "selective_log_softmax",
    "tokenize_trajectory",
]
