#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of bench_aggregation's overlap/gpt…: the GPT of
gpt_torch.py (4 blocks of 4 heads, width 128, context 64, float) on 2
processes of one thread (gloo over the loopback), 32 windows per step split
between them, the gradient step (forward and backward, no optimizer) three
ways in turn: without communication, through DistributedDataParallel with
one bucket holding the whole gradient (one message after the backward
pass) and with buckets of --bucket-kib KiB (DDP's overlap with the backward
pass). Each step is timed between barriers as the slower process's time.

    gpt_ddp_torch.py TEXT [--steps 15] [--bucket-kib 256] [--port 29512]

Prints each way's best and median step in ms, the communication's share of
the one-message step and the exposed fraction (the bucketed step beyond the
compute over the one-message step beyond it), the counters bench_aggregation
prints for gradsum. Run it where bench_aggregation ran (for a slow link,
inside the same `unshare -n` namespace with the same `tc` limit). Not a
test: a measurement beside gradsum's.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT  # noqa: E402


def run(rank, o):
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{o.port}", rank=rank,
                            world_size=2)
    text = open(o.text, "rb").read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    torch.manual_seed(1)
    models = [GPT(len(chars), 64, 4, 4, 128) for _ in range(3)]
    for m in models[1:]:
        m.load_state_dict(models[0].state_dict())
    whole = 64.0  # MiB: more than the gradient, one bucket
    ways = [models[0],
            torch.nn.parallel.DistributedDataParallel(models[1], bucket_cap_mb=whole),
            torch.nn.parallel.DistributedDataParallel(models[2], bucket_cap_mb=o.bucket_kib / 1024)]
    generator = torch.Generator().manual_seed(7)
    offsets = torch.randint(0, len(ids) - 65, (32,), generator=generator)[16 * rank: 16 * rank + 16]
    windows = torch.stack([ids[s: s + 65] for s in offsets.tolist()])

    def step(model):
        logits = model(windows[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), windows[:, 1:].reshape(-1))
        model.zero_grad(set_to_none=True)
        loss.backward()

    def timed(model):
        dist.barrier()
        start = time.perf_counter()
        step(model)
        elapsed = torch.tensor([time.perf_counter() - start])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        return 1e3 * elapsed.item()

    for model in ways * 2:
        step(model)
    times = [[], [], []]
    for s in range(o.steps):
        for i in range(3):
            k = (i + s) % 3
            times[k].append(timed(ways[k]))
    if rank == 0:
        names = ["compute alone", "one message", f"buckets of {o.bucket_kib} KiB"]
        for name, t in zip(names, times):
            print(f"{name}: best={min(t):.1f} ms median={statistics.median(t):.1f} ms")
        c, m, b = (statistics.median(t) for t in times)
        print(f"torch {torch.__version__}: comm_fraction={(m - c) / m:.3f} "
              f"exposed_fraction={(b - c) / (m - c):.3f}")
    dist.destroy_process_group()


def main():
    a = argparse.ArgumentParser()
    a.add_argument("text")
    a.add_argument("--steps", type=int, default=15)
    a.add_argument("--bucket-kib", type=float, default=256)
    a.add_argument("--port", type=int, default=29512)
    o = a.parse_args()
    mp.spawn(run, args=(o,), nprocs=2)


if __name__ == "__main__":
    main()
