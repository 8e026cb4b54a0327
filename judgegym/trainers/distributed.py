"""Data-parallel GRPO on ``torch.distributed``: what the trainer's ranks share.

Launched by ``torchrun`` (or ``accelerate launch``), every rank plays whole groups (a group
is never split, so a relative judge sees all of it) and computes the gradient of its own
sequences; everything the loss is normalised by (the step's sampled tokens and sequences),
the advantages' batch statistics, the failed and flat group counts and the metrics are
reduced across ranks first, and the gradients are summed before the optimizer step, so N
ranks with B/N groups each take the same step as one process with B groups.

The gradients are summed with one ``all_reduce`` over a flat buffer rather than by wrapping
the model in ``DistributedDataParallel``: DDP reduces inside each backward pass and needs
every rank to run the same number of them, while GRPO ranks train different numbers of
micro-batches each step (flat groups carry no gradient and are skipped). The arithmetic is
DDP's (bucketed all-reduce of gradients), done once per optimizer step.

Every collective has a time limit (``GRPOConfig.dist_timeout_s``): a rank that dies or hangs
ends the run on the others with `DistributedError`, never a hang.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

T = TypeVar("T")


class DistributedError(RuntimeError):
    """A collective across the trainer's ranks failed: another rank died, hung past the time
    limit, or the rendezvous broke."""


@dataclass
class Ranks:
    """This process's place among the trainer's ranks (one rank when not launched by
    torchrun); the collectives are no-ops with one rank."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    started_group: bool = False
    """Whether this object initialised the process group (and so destroys it in `close`)."""
    collective_s: float = 0.0
    """Seconds spent in collectives so far (waiting for the other ranks included)."""

    @classmethod
    def from_environment(cls, *, device: str, timeout_s: float) -> Ranks:
        """The ranks torchrun describes in ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK``; the
        process group is initialised here when it is not yet (gloo on CPU, nccl on CUDA),
        with `timeout_s` on every collective."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size <= 1:
            return cls()
        import torch.distributed as dist

        rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        started = False
        if not dist.is_initialized():
            backend = "nccl" if device.startswith("cuda") else "gloo"
            try:
                dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
            except Exception as error:  # noqa: BLE001  (rendezvous errors have many types)
                raise DistributedError(f"rank {rank}: joining the {world_size} trainer ranks failed: {error}") from error
            started = True
        return cls(rank, world_size, local_rank, started)

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that logs, evaluates and checkpoints."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def share(self, count: int) -> slice:
        """This rank's contiguous share of `count` items (``count`` divisible by world size)."""
        per = count // self.world_size
        return slice(self.rank * per, (self.rank + 1) * per)

    # -- collectives ----------------------------------------------------------------------

    def gather(self, value: T) -> list[T]:
        """Every rank's `value`, in rank order (a picklable object)."""
        if not self.active:
            return [value]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        self._guard(lambda: dist.all_gather_object(out, value), "gathering the step's rewards and metrics")
        return out

    def broadcast(self, value: T) -> T:
        """Rank 0's `value` on every rank."""
        if not self.active:
            return value
        import torch.distributed as dist

        box = [value]
        self._guard(lambda: dist.broadcast_object_list(box, src=0), "receiving rank 0's state")
        return box[0]

    def sum(self, values: dict[str, float], *, maxima: Iterable[str] = ()) -> dict[str, float]:
        """`values` summed over ranks (the keys in `maxima`: their maximum). Every rank must
        pass the same keys."""
        if not self.active or not values:
            return dict(values)
        import torch.distributed as dist

        keys = sorted(values)
        high = set(maxima)
        summed = torch.tensor([0.0 if k in high else float(values[k]) for k in keys], dtype=torch.float64)
        peaks = torch.tensor([float(values[k]) if k in high else 0.0 for k in keys], dtype=torch.float64)
        self._guard(lambda: dist.all_reduce(summed, op=dist.ReduceOp.SUM), "summing the step's counts")
        if high:
            self._guard(lambda: dist.all_reduce(peaks, op=dist.ReduceOp.MAX), "reducing the step's maxima")
        return {k: float(peaks[i] if k in high else summed[i]) for i, k in enumerate(keys)}

    def sum_gradients(self, parameters: list[torch.nn.Parameter]) -> None:
        """Replace each parameter's gradient by its sum over ranks (a missing gradient counts
        as zeros), with one all-reduce over a flat buffer."""
        if not self.active:
            return
        import torch.distributed as dist

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        flat = torch.cat([g.reshape(-1) for g in grads])
        self._guard(lambda: dist.all_reduce(flat, op=dist.ReduceOp.SUM), "summing gradients")
        offset = 0
        for parameter, grad in zip(parameters, grads, strict=True):
            n = grad.numel()
            parameter.grad = flat[offset : offset + n].view_as(grad).clone()
            offset += n

    def barrier(self, what: str) -> None:
        if not self.active:
            return
        import torch.distributed as dist

        self._guard(dist.barrier, what)

    def close(self) -> None:
        """Destroy the process group if `from_environment` made it."""
        if self.started_group:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
            self.started_group = False

    def _guard(self, collective: Any, what: str) -> None:
        started = time.perf_counter()
        try:
            collective()
        except DistributedError:
            raise
        except Exception as error:  # noqa: BLE001  (gloo and nccl raise RuntimeError subclasses of many kinds)
            raise DistributedError(
                f"rank {self.rank} of {self.world_size}: {what} failed ({type(error).__name__}: {error}). Another rank probably died "
                "or hung past dist_timeout_s; the last checkpoint is intact, resume with the same number of ranks"
            ) from error
        finally:
            self.collective_s += time.perf_counter() - started


__all__ = ["DistributedError", "Ranks"]
