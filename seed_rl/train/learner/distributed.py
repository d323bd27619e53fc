"""Data parallelism over processes (``torchrun`` / ``accelerate launch``) with torch.distributed.

Each process trains on its own rows of an update; the token counts that every loss is a mean
over are summed over processes first, and so are the gradients before the optimizer step. The
result is the update a single process would make on all the rows: every loss is
``sum over all tokens / all tokens``, whichever process holds a token (tested with two gloo
processes against one). The collectives are torch.distributed's own ``all_reduce``; nothing
here runs unless a process group is initialised with more than one process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import torch

T = TypeVar("T")


#: Set while :func:`run_on_main` runs work on the main process alone: no collective may run then.
_ALONE = False


def world() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) without a process group, or in work that
    :func:`run_on_main` runs on the main process alone."""
    dist = torch.distributed
    if not _ALONE and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_distributed() -> bool:
    return world()[1] > 1


def is_main() -> bool:
    """Whether this process writes the run's files (rank 0, or the only process)."""
    return world()[0] == 0


def init_from_env() -> tuple[int, int]:
    """Join the process group that ``torchrun`` / ``accelerate launch`` describe in the environment
    (``WORLD_SIZE`` > 1; NCCL where CUDA is available, gloo otherwise); returns (rank, world size).
    Alone, or with a group already initialised, it changes nothing."""
    dist = torch.distributed
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and dist.is_available() and not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            dist.init_process_group("nccl")
        else:
            dist.init_process_group("gloo")
    return world()


def _device() -> torch.device:
    """Where collective buffers live: the process's GPU under NCCL, the CPU under gloo."""
    if torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def barrier() -> None:
    if is_distributed():
        torch.distributed.barrier()


def gather_objects(value: T) -> list[T]:
    """Every process's ``value``, in rank order, on every process (``[value]`` alone)."""
    if not is_distributed():
        return [value]
    gathered: list[Any] = [None] * world()[1]
    torch.distributed.all_gather_object(gathered, value)
    return gathered


def run_on_main(work: Callable[[], T]) -> T:
    """``work()`` on the main process only, as if it were the only process (a training step in it
    sums nothing over the others); its result, or the exception it raised, reaches every process,
    so a refused config stops every rank with the same error and none waits forever."""
    global _ALONE
    if not is_distributed():
        return work()
    outcome: list[Any] = [None]
    if is_main():
        _ALONE = True
        try:
            outcome = [("ok", work())]
        except Exception as error:  # re-raised on every process below
            outcome = [("error", error)]
        finally:
            _ALONE = False
    torch.distributed.broadcast_object_list(outcome, src=0)
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def broadcast_parameters(parameters: Iterable[torch.Tensor]) -> None:
    """Copy the main process's values of ``parameters`` into every process's."""
    if not is_distributed():
        return
    with torch.no_grad():
        for tensor in parameters:
            torch.distributed.broadcast(tensor.data, src=0)


def _reduce(values: Sequence[float], op: torch.distributed.ReduceOp) -> list[float]:
    if not is_distributed():
        return list(values)
    tensor = torch.tensor(list(values), dtype=torch.float64, device=_device())
    torch.distributed.all_reduce(tensor, op=op)
    return tensor.cpu().tolist()


def sum_over_processes(values: Sequence[float]) -> list[float]:
    """Each value summed over every process (as given where there is one process)."""
    return _reduce(values, torch.distributed.ReduceOp.SUM)


def max_over_processes(values: Sequence[float]) -> list[float]:
    """Each value's maximum over processes (as given where there is one process)."""
    return _reduce(values, torch.distributed.ReduceOp.MAX)


def sum_dicts_over_processes(values: dict[str, float]) -> dict[str, float]:
    """Per key, the sum over processes of the values they have (a process may lack a key: one
    that held no skill row has no OPD statistics)."""
    out: dict[str, float] = {}
    for part in gather_objects(dict(values)):
        for key, value in (part or {}).items():
            out[key] = out.get(key, 0.0) + value
    return out


def whole(tensor: torch.Tensor) -> torch.Tensor:
    """A sharded (FSDP) tensor gathered whole, which every process must ask for at once; any other
    tensor as it is."""
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def sum_gradients(parameters: Iterable[torch.nn.Parameter]) -> None:
    """Sum every parameter's gradient over processes, in one flat buffer (a process that trained
    no row contributes zeros); a parameter without a gradient gets the sum too."""
    if not is_distributed():
        return
    params = list(parameters)
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1).to(torch.float32) for g in grads])  # on the params' device (NCCL)
    torch.distributed.all_reduce(flat, op=torch.distributed.ReduceOp.SUM)
    offset = 0
    for p in params:
        n = p.numel()
        p.grad = flat[offset : offset + n].view_as(p).to(p.dtype)
        offset += n
