#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""What tierpool.torch's offload costs per training step (not a test).

Times training steps (forward, backward, optimizer step: Adam) of an MLP and a small
transformer in four ways on the same machine: plain PyTorch; activation offload
(offload_activations); parameter, gradient and optimizer-state offload (offload_module +
offload_optimizer); both. The pool's device tier is a quarter of what a step touches, so
the pool evicts and copies back. Prints, per model and way, the median step time, its
spread (min..max over the timed steps), the ratio of the medians to plain and that of
the minimums (less sensitive to a shared machine's load). The ways
take turns step by step (a shared machine's load changes hit them alike).

On the simulated device (no GPU) the "device" is host memory and a copy is a memcpy: the
figures are the Python hooks' and the pool's bookkeeping, not the PCIe link's.

  build/pyenv/bin/python python/bench/torch_offload_overhead.py [--steps 15] [--warmup 2]
"""

import argparse
import statistics
import time

import torch

import tierpool
import tierpool.torch as tpt


def mlp(width, layers):
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    mods.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*mods)


class Transformer(torch.nn.Module):
    def __init__(self, dim, heads, ff, depth, inp):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Linear(inp, dim)
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(dim, heads, dim_feedforward=ff, dropout=0.0, batch_first=True)
            for _ in range(depth))
        self.head = torch.nn.Linear(dim, 1)

    def forward(self, x):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(h).mean(dim=1)


MODELS = {
    "mlp": (lambda: mlp(512, 8), (64, 512)),
    "transformer": (lambda: Transformer(128, 4, 512, 4, 64), (8, 32, 64)),
}
WAYS = ["plain", "activations", "params+optimizer", "both"]


def make_pool(device_bytes):
    tiers = [{"kind": "device", "capacity_bytes": device_bytes, "chunk_bytes": device_bytes, "name": "dev"},
             {"kind": "host", "capacity_bytes": 1 << 30, "chunk_bytes": 1 << 28, "name": "far"}]
    return tierpool.Pool(tiers=tiers, backend="sim", sim_memory="real", read_environment=False,
                         publish=False, quiet=True)


class Setup:
    """One way of training one model: its model, optimizer, pool and handle."""

    def __init__(self, model_name, way):
        make, self.shape = MODELS[model_name]
        self.way = way
        self.model = make()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4)
        self.params = sum(p.numel() * p.element_size() for p in self.model.parameters())
        self.device_bytes = max(1 << 16, (4 * self.params) // 4)  # params + grads + Adam's two states, over 4
        self.pool = make_pool(self.device_bytes) if way != "plain" else None
        self.handle = None
        if way in ("params+optimizer", "both"):
            self.handle = tpt.offload_module(self.pool, self.model)
            self.opt = tpt.offload_optimizer(self.handle, self.opt)
        self.gen = torch.Generator().manual_seed(1)
        self.times = []

    def step(self, timed):
        x = torch.randn(*self.shape, generator=self.gen)
        y = torch.randn(self.shape[0], 1, generator=self.gen)
        t0 = time.perf_counter()
        self.opt.zero_grad()
        if self.way in ("activations", "both"):
            with tpt.offload_activations(self.pool, min_bytes=4096, prefetch=True):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
        else:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.opt.step()
        if timed:
            self.times.append(time.perf_counter() - t0)

    def close(self):
        evictions = 0
        if self.pool is not None:
            evictions = self.pool.stats()["tiers"][0]["evictions"]
            if self.handle is not None:
                self.handle.close()
            self.pool.close()
        return evictions


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=15, help="timed steps per way (at least 7)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, tierpool {tierpool.__version__}, "
          f"sim device; {args.steps} timed steps after {args.warmup} warm-up, Adam")
    for model_name in MODELS:
        # Note [Interleaved steps]: the four ways take turns step by step, so that a load
        # change on a shared machine hits them alike.
        setups = [Setup(model_name, way) for way in WAYS]
        for i in range(args.warmup + args.steps):
            for setup in setups:
                setup.step(timed=i >= args.warmup)
        rows = []
        for setup in setups:
            t = setup.times
            rows.append((setup.way, statistics.median(t), min(t), max(t), setup.close()))
        base, base_min = rows[0][1], rows[0][2]
        params, device_bytes = setups[0].params, setups[0].device_bytes
        print(f"\n{model_name}: parameters {params / 2**20:.2f} MiB, device tier {device_bytes / 2**20:.2f} MiB")
        print(f"  {'way':<18} {'median ms':>10} {'min..max ms':>17} {'x plain':>8} {'x (mins)':>9} {'evictions':>10}")
        for way, med, lo, hi, ev in rows:
            print(f"  {way:<18} {med * 1e3:>10.2f} {lo * 1e3:>8.2f}..{hi * 1e3:<8.2f} {med / base:>8.2f} "
                  f"{lo / base_min:>9.2f} {ev:>10}")

if __name__ == "__main__":
    main()
