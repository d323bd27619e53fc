"""Data parallelism over processes (``torchrun`` / ``accelerate launch``) with torch.distributed.

Each process trains on its own rows of an update; the token counts that every loss is a mean
over are summed over processes first, and so are the gradients before the optimizer step. The
result is the update a single process would make on all the rows: every loss is
``sum over all tokens / all tokens``, whichever process holds a token (tested with two gloo
processes against one). The collectives are torch.distributed's own ``all_reduce``; nothing
here runs unless a process group is initialised with more than one process.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch


def world() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) without a process group."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_distributed() -> bool:
    return world()[1] > 1


def sum_over_processes(values: Sequence[float]) -> list[float]:
    """Each value summed over every process (as given where there is one process)."""
    if not is_distributed():
        return list(values)
    tensor = torch.tensor(list(values), dtype=torch.float64)
    torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.SUM)
    return tensor.tolist()


def sum_dicts_over_processes(values: dict[str, float]) -> dict[str, float]:
    """Per key, the sum over processes of the values they have (a process may lack a key: one
    that held no skill row has no OPD statistics)."""
    if not is_distributed():
        return dict(values)
    gathered: list[dict[str, float] | None] = [None] * world()[1]
    torch.distributed.all_gather_object(gathered, dict(values))
    out: dict[str, float] = {}
    for part in gathered:
        for key, value in (part or {}).items():
            out[key] = out.get(key, 0.0) + value
    return out


def sum_gradients(parameters: Iterable[torch.nn.Parameter]) -> None:
    """Sum every parameter's gradient over processes, in one flat buffer (a process that trained
    no row contributes zeros); a parameter without a gradient gets the sum too."""
    if not is_distributed():
        return
    params = list(parameters)
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1).to(torch.float32) for g in grads])
    torch.distributed.all_reduce(flat, op=torch.distributed.ReduceOp.SUM)
    offset = 0
    for p in params:
        n = p.numel()
        p.grad = flat[offset : offset + n].view_as(p).to(p.dtype)
        offset += n
