"""judgegym: Gymnasium environments and judges for training LLM agents on tasks without
string-matchable answers.

Importing the package registers its environments: ``gym.make("RagSupport-v0")``.
"""

from .envs import ChatEnv, register_envs
from .trajectory import Group, Message, TerminationReason, ToolCall, Trajectory, read_jsonl, write_jsonl

__version__ = "0.1.0"

register_envs()

__all__ = ["ChatEnv", "Group", "Message", "TerminationReason", "ToolCall", "Trajectory", "read_jsonl", "write_jsonl"]
