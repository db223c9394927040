#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of bench_gpt: the same GPT (names, shapes and
arithmetic of gradsum's make_gpt: pre-norm blocks, causal attention,
GELU in its tanh form, logits tied to the token embedding), the same
character vocabulary and windows, AdamW, float, on the CPU.

    gpt_torch.py TEXT [--threads 2] [--steps 60] [--warmup 10]
                 [--train-steps 0] [--batch 32] [--context 64] [--layers 4]
                 [--heads 4] [--width 128] [--lr 1e-3] [--seed 1]

Times --steps training steps after --warmup and prints the best, median
and mean step in ms (the numbers bench_gpt is compared with). With
--train-steps N it instead trains N steps from the start and prints the
validation loss over every window at stride context of the last tenth of
the text. Not a test: a measurement beside gradsum's.
"""
import argparse
import ctypes
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def blas_core():
    """The kernel set of the OpenBLAS this process loaded (what bench_gpt
    reports as blas_core), or why it is not known."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    for path in sorted(paths):
        try:
            corename = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        corename.restype = ctypes.c_char_p
        name = corename()
        return name.decode() if name else "unknown"
    return "not OpenBLAS"


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fcproj = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (u.view(shape).transpose(1, 2) for u in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, heads, width):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.lnf = nn.LayerNorm(width)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 1:
                nn.init.ones_(p)
            else:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        for block in self.blocks:
            x = block(x)
        return self.lnf(x) @ self.wte.weight.t()


def main():
    a = argparse.ArgumentParser()
    a.add_argument("text")
    a.add_argument("--threads", type=int, default=2)
    a.add_argument("--steps", type=int, default=60)
    a.add_argument("--warmup", type=int, default=10)
    a.add_argument("--train-steps", type=int, default=0)
    a.add_argument("--batch", type=int, default=32)
    a.add_argument("--context", type=int, default=64)
    a.add_argument("--layers", type=int, default=4)
    a.add_argument("--heads", type=int, default=4)
    a.add_argument("--width", type=int, default=128)
    a.add_argument("--lr", type=float, default=1e-3)
    a.add_argument("--weight-decay", type=float, default=0.01)
    a.add_argument("--seed", type=int, default=1)
    o = a.parse_args()
    torch.set_num_threads(o.threads)
    torch.manual_seed(o.seed)
    text = open(o.text, "rb").read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    held = int(len(text) * 0.1)
    train = torch.tensor([index[c] for c in text[: len(text) - held]], dtype=torch.long)
    valid = torch.tensor([index[c] for c in text[len(text) - held:]], dtype=torch.long)
    model = GPT(len(chars), o.context, o.layers, o.heads, o.width)
    adamw = torch.optim.AdamW(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    generator = torch.Generator().manual_seed(o.seed)

    def step():
        offsets = torch.randint(0, len(train) - o.context, (o.batch,), generator=generator)
        windows = torch.stack([train[s: s + o.context + 1] for s in offsets.tolist()])
        logits = model(windows[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), windows[:, 1:].reshape(-1))
        adamw.zero_grad(set_to_none=True)
        loss.backward()
        adamw.step()
        return loss.item()

    parameters = sum(p.numel() for p in model.parameters())
    print(f"gpt_torch: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"vocabulary {len(chars)}, {parameters} parameters, batch {o.batch} x {o.context}, "
          f"BLAS core {blas_core()}")
    if o.train_steps > 0:
        for s in range(o.train_steps):
            loss = step()
            if (s + 1) % 100 == 0:
                print(f"step {s + 1} loss {loss:.4f}", flush=True)
        with torch.no_grad():
            n = (len(valid) - 1) // o.context
            total = 0.0
            for first in range(0, n, 64):
                w = torch.stack([valid[k * o.context: (k + 1) * o.context + 1]
                                 for k in range(first, min(n, first + 64))])
                logits = model(w[:, :-1])
                total += F.cross_entropy(logits.reshape(-1, len(chars)), w[:, 1:].reshape(-1),
                                         reduction="sum").item()
        print(f"validation_loss={total / (n * o.context):.6f}")
        return
    for _ in range(o.warmup):
        step()
    times = []
    for _ in range(o.steps):
        start = time.perf_counter()
        step()
        times.append(1e3 * (time.perf_counter() - start))
    print(f"step_ms best={min(times):.2f} median={statistics.median(times):.2f} "
          f"mean={statistics.fmean(times):.2f}")


if __name__ == "__main__":
    main()
