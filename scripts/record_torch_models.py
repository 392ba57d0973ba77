#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Record real PyTorch training runs of ResNet-18 and GPT-2 small through tierpool.torch as traces
that carry their compute.

  tests/data/resnet18_torch.tpb  ResNet-18 (torchvision's layout, written out here: no torchvision
                                 needed), batch 32 x 3 x 224 x 224, 1000 classes, fp32, Adam
  tests/data/gpt2_torch.tpb      GPT-2 small (nanoGPT's layout: 12 layers, hidden 768, 12 heads,
                                 vocabulary 50257, eager causal attention, GELU tanh, dropout 0;
                                 lm_head untied from wte, see below), batch 2 x 1024 tokens, fp32,
                                 Adam

Each trains for 3 steps with its parameters and gradients (tierpool.torch.offload_module), Adam's
states (offload_optimizer) and its saved activations of 64 KiB and more (offload_activations) in a
simulated pool on the virtual clock, which records every call (trace_path). Unlike
scripts/make_model_traces.py (traces written from layer shapes) these are what PyTorch does: the
tensors autograd saves, in its order, with torch's own module boundaries. Unlike
scripts/make_torch_trace.py (a tiny MLP, no compute) each module's device time is in the trace:
tierpool.torch.roofline tells the pool max(flops / 100 TFLOP/s, bytes / 2 TB/s) per module forward
and twice that for its backward, and each parameter's Adam step by its bytes; the attention's own
matrix products (QK^T and AV) are counted by a cost function given here. The phases `iter N`,
`forward`, `backward` and `optimizer` are marked.

torch computes for real, on the CPU: 15 s for ResNet-18 and 22 minutes for GPT-2 with Debian's torch
(generic BLAS, one thread, about 6 GFLOP/s).
What depends on torch's version: which tensors autograd saves (torch 1.13, Debian 12's, made the
committed files). GPT-2's lm_head is untied from wte: offload_module refuses a parameter shared by
two units (tied weights are used at both ends of the step), so the model here has 163.0 M
parameters, not 124.4 M.

Usage:
  /usr/bin/python3 scripts/record_torch_models.py                  # both, into tests/data/
  /usr/bin/python3 scripts/record_torch_models.py --model resnet18 -o r.tpb --steps 2
(with the tierpool package importable: build/pyenv/bin/python after scripts/run-tests.sh.)
"""

import argparse
import math
import os
import time

import torch

import tierpool
import tierpool.torch as tpt

KiB = 1024
GiB = 1 << 30


# ---- ResNet-18 --------------------------------------------------------------------------------

class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.relu = torch.nn.ReLU(inplace=True)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                  torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet18(torch.nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(64)
        self.relu = torch.nn.ReLU(inplace=True)
        self.maxpool = torch.nn.MaxPool2d(3, 2, 1)
        chans = [64, 128, 256, 512]
        cin = 64
        for i, c in enumerate(chans):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", torch.nn.Sequential(BasicBlock(cin, c, stride), BasicBlock(c, c, 1)))
            cin = c
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---- GPT-2 small ------------------------------------------------------------------------------

class CausalSelfAttention(torch.nn.Module):
    def __init__(self, dim, heads, seq):
        super().__init__()
        self.heads = heads
        self.c_attn = torch.nn.Linear(dim, 3 * dim)
        self.c_proj = torch.nn.Linear(dim, dim)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq),
                             persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


def attention_cost(module, inputs, output):
    """The attention's own work besides its two Linear children: QK^T and AV (2 flops per
    multiply-add each, 4 b t^2 c in all), and the b h t^2 scores written, scaled, masked,
    softmaxed and read again (fp32)."""
    b, t, c = inputs[0].shape
    scores = b * module.heads * t * t * 4
    return 4 * b * t * t * c, 8 * scores


class Block(torch.nn.Module):
    def __init__(self, dim, heads, seq):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, seq)
        self.ln_2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(approximate="tanh"),
                                       torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(torch.nn.Module):
    def __init__(self, vocab=50257, seq=1024, layers=12, dim=768, heads=12):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, dim)
        self.wpe = torch.nn.Embedding(seq, dim)
        self.h = torch.nn.ModuleList(Block(dim, heads, seq) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(dim)
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---- recording --------------------------------------------------------------------------------

MODELS = {
    # name: (model factory, batch maker (generator) -> (input, target), loss, costs, device tier)
    "resnet18": (ResNet18,
                 lambda g: (torch.randn(32, 3, 224, 224, generator=g), torch.randint(0, 1000, (32,), generator=g)),
                 torch.nn.functional.cross_entropy, {}, 8 * GiB),
    "gpt2": (GPT2,
             lambda g: (torch.randint(0, 50257, (2, 1024), generator=g), torch.randint(0, 50257, (2, 1024), generator=g)),
             lambda logits, y: torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)),
             {CausalSelfAttention: attention_cost}, 12 * GiB),
}


def record(name, path, steps):
    make, batch, loss_fn, costs, device_bytes = MODELS[name]
    if os.path.exists(path):
        os.remove(path)
    # A device tier that holds the whole run: the recorded calls are the program's, and none
    # falls back to a host lease (which a smaller tier would make).
    tiers = [{"kind": "device", "capacity_bytes": device_bytes, "name": "dev"},
             {"kind": "host", "capacity_bytes": 2 * device_bytes, "name": "far"}]
    pool = tierpool.Pool(tiers=tiers, backend="sim", sim_memory="real", sim_clock="virtual",
                         sim_device_bytes=device_bytes, read_environment=False, publish=False, quiet=True,
                         trace_path=path)
    torch.manual_seed(0)
    started = time.monotonic()
    with pool:
        model = make()
        model.train()
        pool.note_phase("init")
        with tpt.offload_module(pool, model) as handle:
            opt = tpt.offload_optimizer(handle, torch.optim.Adam(model.parameters(), lr=1e-4))
            gen = torch.Generator().manual_seed(1)
            losses = []
            with tpt.roofline(pool, model, costs=costs) as r:
                for step in range(steps):
                    x, y = batch(gen)
                    pool.note_phase(f"iter {step}")
                    pool.note_phase("forward")
                    with tpt.offload_activations(pool, min_bytes=64 * KiB):
                        loss = loss_fn(model(x), y)
                    pool.note_phase("backward")
                    loss.backward()
                    pool.note_phase("optimizer")
                    opt.step()
                    opt.zero_grad()
                    losses.append(float(loss))
            pool.note_phase("teardown")
            summary = (f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters; losses "
                       f"{', '.join(f'{v:.4f}' for v in losses)}; {r!r}; {handle.params} parameters and "
                       f"{opt.states} states offloaded")
    return summary + f"; {time.monotonic() - started:.0f} s"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = os.path.join(here, "..", "tests", "data")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["all", *MODELS], default="all")
    ap.add_argument("-o", "--output", help="output file (one model only; default tests/data/<model>_torch.tpb)")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    names = list(MODELS) if args.model == "all" else [args.model]
    if args.output and len(names) != 1:
        ap.error("-o needs --model")
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    for name in names:
        out = args.output or os.path.join(data, f"{name}_torch.tpb")
        summary = record(name, out, args.steps)
        print(f"{os.path.relpath(out)}: {os.path.getsize(out)} bytes; {summary}", flush=True)


if __name__ == "__main__":
    main()
