#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of bench_aggregation's zero1/gpt…/adamw: the GPT of
gpt_torch.py (4 blocks of 4 heads, width 128, context 64, float) on --ranks
processes of one thread (gloo over the loopback), 32 windows per step split
evenly among them, the AdamW training step (forward, backward with
DistributedDataParallel's allreduce, optimizer step) two ways in turn, each
from its own copy of the same initial parameters: with the optimizer state
replicated on every process (torch.optim.AdamW) and sharded over them
(ZeroRedundancyOptimizer around AdamW, ZeRO stage 1: each process updates
its share of the parameters and broadcasts them). Which way goes first
alternates from one step to the next; each step is timed between barriers
as the slowest process's time.

    gpt_zero_torch.py TEXT [--ranks 4] [--steps 40] [--warmup 2]
                      [--port 29513] [--lr 3e-4]

Prints each way's best and median step in ms, step_ratio (the sharded
median over the replicated one), the optimizer state per process in bytes
(every tensor of the optimizer's state; for the sharded way the largest
process's share) with memory_ratio (sharded over replicated), the counters
bench_aggregation prints for gradsum; then whether the two copies of the
parameters are still bit-identical (PyTorch does not promise it), and the
size of the sharded state once consolidated on rank 0 (its state_dict needs
consolidate_state_dict first, on every process). Not a test: a measurement
beside gradsum's.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT  # noqa: E402


def state_bytes(state):
    """The bytes of every tensor in an optimizer's state (its values)."""
    return sum(v.numel() * v.element_size()
               for s in state.values() for v in s.values() if torch.is_tensor(v))


def run(rank, o):
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{o.port}", rank=rank,
                            world_size=o.ranks)
    text = open(o.text, "rb").read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    torch.manual_seed(1)
    models = [GPT(len(chars), 64, 4, 4, 128) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    whole, split = (DistributedDataParallel(m) for m in models)
    replicated = torch.optim.AdamW(whole.parameters(), lr=o.lr)
    sharded = ZeroRedundancyOptimizer(split.parameters(), optimizer_class=torch.optim.AdamW,
                                      lr=o.lr)
    ways = [(whole, replicated), (split, sharded)]
    generator = torch.Generator().manual_seed(7)
    offsets = torch.randint(0, len(ids) - 65, (32,), generator=generator)
    mine = offsets[32 * rank // o.ranks: 32 * (rank + 1) // o.ranks]
    windows = torch.stack([ids[s: s + 65] for s in mine.tolist()])

    def step(model, optimizer):
        logits = model(windows[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), windows[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def timed(way):
        dist.barrier()
        start = time.perf_counter()
        step(*way)
        elapsed = torch.tensor([time.perf_counter() - start])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        return 1e3 * elapsed.item()

    for _ in range(o.warmup):
        for way in ways:
            step(*way)
    times = [[], []]
    for s in range(o.steps):
        order = (1, 0) if s % 2 == 1 else (0, 1)
        for k in order:
            times[k].append(timed(ways[k]))

    bytes_whole = state_bytes(replicated.state)
    # 1.13 keeps this process's share in a local AdamW, `sharded.optim`;
    # `sharded.state` itself stays empty.
    bytes_split = torch.tensor([float(state_bytes(sharded.optim.state))], dtype=torch.float64)
    dist.all_reduce(bytes_split, op=dist.ReduceOp.MAX)
    same = torch.tensor([int(all(torch.equal(a, b) for a, b in
                                 zip(models[0].parameters(), models[1].parameters())))])
    dist.all_reduce(same, op=dist.ReduceOp.MIN)
    sharded.consolidate_state_dict(to=0)  # collective: every process sends its share
    if rank == 0:
        for name, t in zip(["replicated", "sharded"], times):
            print(f"{name}: best={min(t):.1f} ms median={statistics.median(t):.1f} ms")
        w, z = (statistics.median(t) for t in times)
        print(f"torch {torch.__version__}, {o.ranks} ranks: step_ratio={z / w:.3f} "
              f"state_bytes_replicated={bytes_whole} "
              f"state_bytes_sharded={int(bytes_split.item())} "
              f"memory_ratio={bytes_split.item() / bytes_whole:.3f}")
        print(f"parameters bit-identical after {o.warmup + o.steps} steps: "
              f"{'yes' if same.item() else 'no'}")
        consolidated = state_bytes(sharded.state_dict()["state"])
        print(f"ZeroRedundancyOptimizer.state_dict needs consolidate_state_dict(to=0) on "
              f"every rank first; consolidated on rank 0: {consolidated} bytes")
    dist.barrier()  # no process leaves while rank 0 still prints
    dist.destroy_process_group()


def main():
    a = argparse.ArgumentParser()
    a.add_argument("text")
    a.add_argument("--ranks", type=int, default=4)
    a.add_argument("--steps", type=int, default=40)
    a.add_argument("--warmup", type=int, default=2)
    a.add_argument("--port", type=int, default=29513)
    a.add_argument("--lr", type=float, default=3e-4)
    o = a.parse_args()
    mp.spawn(run, args=(o,), nprocs=o.ranks)


if __name__ == "__main__":
    main()
