# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""The small models the PyTorch tests train (test_torch_offload.py on the CPU,
test_torch_cuda.py on a GPU), each seeded in its constructor so that two builds are the same
bits, and the byte-for-byte comparison of tensors."""

import torch


def make_mlp(width, layers):
    """`layers` x (Linear(width, width), ReLU), then Linear(width, 1); seeded with 0."""
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    mods.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*mods)


class TinyTransformer(torch.nn.Module):
    """An input projection (width -> dim), `depth` encoder layers (self-attention with
    `heads` heads, feed-forward of `ff`, LayerNorm, dropout 0.1: the same random draws with
    and without the pool) and a head; seeded with 0."""

    def __init__(self, width, dim, heads, ff, depth):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Linear(width, dim)
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(dim, heads, dim_feedforward=ff, dropout=0.1, batch_first=True)
            for _ in range(depth))
        self.head = torch.nn.Linear(dim, 1)

    def forward(self, x):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(h).mean(dim=1)


def bit_equal(a, b):
    """Same dtype, shape and bytes."""
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))
