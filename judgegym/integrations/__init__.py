"""Plug-ins: judgegym envs, judges and trajectories inside other people's training loops.

- `judgegym.integrations.trl`: TRL's ``GRPOTrainer`` (``reward_funcs`` and ``environment_factory``).
- `judgegym.integrations.art`: OpenPipe ART's ``Trajectory`` / ``TrajectoryGroup``, both ways.
- `judgegym.integrations.export`: trajectories and groups as a Hugging Face ``datasets.Dataset``
  or as OpenAI-chat JSONL.

Each module imports its peer library only when a function needs it.
"""
