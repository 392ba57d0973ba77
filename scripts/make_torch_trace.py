#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Record a real PyTorch training run through tierpool.torch's offload as a tierpool trace.

  tests/data/torch_mlp_offload.tpb  an MLP (4 x Linear 64->64 + ReLU, Linear 64->1), batch 32,
                                    3 Adam steps with parameters, gradients, Adam's states and
                                    activations offloaded (tierpool.torch.offload_module,
                                    offload_optimizer, offload_activations) on a sim pool with
                                    a 32 KiB device tier

Unlike scripts/make_model_traces.py (traces built by hand from layer shapes), this one is
recorded: the pool's own recorder (pool_options::trace_path, what TIERPOOL_TRACE sets for any
pool; docs/chapters/traces.md) writes every allocate, acquire, release, prefetch and free that
the hooks make, stamped with the sim's virtual clock. Compute is torch's and is not in the trace.
The ids, sizes, names and order of the events depend only on the model and the pool, so a
rerun writes the same events; the time stamps are the virtual clock's.

Needs the tierpool package and torch (build/pyenv after scripts/run-tests.sh). The CTest
cli.fixtures.torch_mlp_* replay the file (tests/cli_tests.cmake).

Usage:
  build/pyenv/bin/python scripts/make_torch_trace.py               # write tests/data/torch_mlp_offload.tpb
  build/pyenv/bin/python scripts/make_torch_trace.py -o run.tpt    # elsewhere; .tpt: the text format
"""

import argparse
import os

import torch

import tierpool
import tierpool.torch as tpt

KiB = 1024


def record(path, steps=3):
    if os.path.exists(path):
        os.remove(path)
    tiers = [{"kind": "device", "capacity_bytes": 32 * KiB, "chunk_bytes": 32 * KiB, "name": "dev"},
             {"kind": "host", "capacity_bytes": 8 << 20, "chunk_bytes": 8 << 20, "name": "far"}]
    pool = tierpool.Pool(tiers=tiers, backend="sim", sim_memory="real", sim_clock="virtual",
                         read_environment=False, publish=False, quiet=True, trace_path=path)
    with pool:
        torch.manual_seed(0)
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(64, 1))
        model = torch.nn.Sequential(*layers)
        with tpt.offload_module(pool, model) as handle:
            opt = tpt.offload_optimizer(handle, torch.optim.Adam(model.parameters(), lr=1e-3))
            gen = torch.Generator().manual_seed(1)
            for _ in range(steps):
                x = torch.randn(32, 64, generator=gen)
                y = torch.randn(32, 1, generator=gen)
                opt.zero_grad()
                with tpt.offload_activations(pool, min_bytes=1024, prefetch=True):
                    loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
            summary = f"{handle!r} {opt!r}"
    # The bindings do not expose pool::tracing_error(): `tierpool trace stat` on the file
    # says whether it is whole ("well-formed yes", the CTest cli.fixtures.torch_mlp_stat).
    return summary


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=os.path.join(here, "..", "tests", "data", "torch_mlp_offload.tpb"))
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    summary = record(args.output, args.steps)
    print(f"{os.path.relpath(args.output)}: {os.path.getsize(args.output)} bytes; {summary}")


if __name__ == "__main__":
    main()
