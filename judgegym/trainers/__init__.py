"""Trainers that turn judged groups into better policies (GRPO lands here)."""
