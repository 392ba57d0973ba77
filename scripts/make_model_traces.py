#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Write traces of two real models' training, built by hand from their layer shapes, in
tierpool's text trace format (docs/chapters/traces.md). They are fixtures until PyTorch
can record such traces itself.

  resnet18_train.tpt  torchvision ResNet-18, ImageNet input (batch 32, 3x224x224), fp32
  gpt2_small_train.tpt  GPT-2 small as in nanoGPT (12 layers, hidden 768, 12 heads,
                        seq 1024, batch 8, vocab 50257), eager attention, fp32

Both: Adam training (AdamW makes the same accesses) with PyTorch's memory behaviour,
3 iterations, one stream (0).
What is modelled (tests/data/README.md and docs/chapters/traces.md say the same):

- Every parameter is its own tensor with its real shape, and so are the buffers
  (BatchNorm running mean / var, GPT-2's causal-mask buffer per layer).
- Forward allocates each op's output and keeps what autograd saves for backward: the
  tensors the op's backward formula needs (a convolution its input, a BatchNorm its input
  and its per-channel mean / inverse std, a ReLU its result, a max-pool its input and int64
  indices, a linear layer its input, a softmax / log_softmax its result, a LayerNorm its
  input and its per-row mean / rstd). An activation is freed as soon as nothing holds it:
  neither the Python code (the next statement rebinds the variable) nor a saved slot.
- Backward runs the nodes in reverse order of creation, as autograd does for these
  graphs. After a node runs, its saved tensors are released (retain_graph=False), so
  activations are freed during backward. Gradients of activations are allocated by the
  node that makes them and freed once consumed; a tensor reached twice (a residual) has
  its second gradient added in place into the first.
- Parameter gradients follow `zero_grad(set_to_none=True)` (PyTorch 2's default): each
  is allocated by its first backward write, and all are freed after the optimizer step.
- Adam's exp_avg / exp_avg_sq are allocated (and zero-filled) at the first step, as
  torch.optim.Adam does lazily; each step reads the gradient and updates m, v and the
  weight (read g, rw m, rw v, rw w). The step counters (scalars) are left out.
- A kernel's duration is a roofline: max(FLOPs / 100 TFLOP/s, bytes / 2 TB/s), the bytes
  being what the kernel reads and writes. 100 TFLOP/s is the effective matrix rate
  (TF32 on an H100-class device at typical efficiency), 2 TB/s the effective HBM bandwidth.
  No launch overhead.
- Phases as tierpool's generators write them: init, then per iteration "iter N",
  forward, backward, optimizer; teardown at the end.

The figures each trace must have (tensors, events, working set, peak live) are printed by
`--summary` and asserted by the CLI tests (tests/cli_tests.cmake); `--check` regenerates
the traces in memory and compares them with the committed files.

Usage:
  scripts/make_model_traces.py                  # write both into tests/data/
  scripts/make_model_traces.py --out-dir DIR    # elsewhere
  scripts/make_model_traces.py --check          # exit 1 if tests/data/ differs
  scripts/make_model_traces.py --summary        # the figures only
"""

import argparse
import math
import os
import sys

PEAK_FLOPS = 100e12   # effective matrix throughput, FLOP/s
HBM_BYTES_S = 2.0e12  # effective device memory bandwidth, bytes/s
FP32 = 4
INT64 = 8
ITERATIONS = 3


def kernel_ns(flops, nbytes):
    """Roofline duration of one kernel, ns (at least 1)."""
    return max(1, int(round(max(flops / PEAK_FLOPS, nbytes / HBM_BYTES_S) * 1e9)))


class Buf:
    """One allocation (a tensor's storage). `refs` counts its holders: Python variables,
    autograd saved slots, gradient slots."""

    def __init__(self, tid, nbytes, name):
        self.id = tid
        self.nbytes = nbytes
        self.name = name
        self.refs = 1


class Var:
    """An autograd value: a buffer (views and in-place results share one), whether it
    needs a gradient, and for a parameter, its gradient buffer."""

    def __init__(self, buf, requires_grad=False, param=False, shape_elems=0):
        self.buf = buf
        self.requires_grad = requires_grad or param
        self.param = param
        self.grad = None
        self.elems = shape_elems


class Node:
    def __init__(self, inputs, outputs, saved, backward):
        self.inputs = inputs
        self.outputs = outputs
        self.saved = saved
        self.backward = backward


class Trace:
    """The event writer, the accounting the summary prints, and a small autograd engine."""

    def __init__(self, title):
        self.lines = ["# tierpool-trace v1"]
        self.header = title
        self.next_id = 1
        self.live = 0
        self.peak = 0
        self.working_set = 0
        self.tensors = 0
        self.counts = {"alloc": 0, "free": 0, "access": 0, "compute": 0, "phase": 0}
        self.compute_ns = 0
        self.nodes = []
        self.params = []
        self.adam = {}

    # ---- events ----
    def alloc(self, nbytes, name):
        assert nbytes > 0, name
        tid = self.next_id
        self.next_id += 1
        self.lines.append(f"alloc {tid} {nbytes} name={name}")
        self.counts["alloc"] += 1
        self.tensors += 1
        self.working_set += nbytes
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        return Buf(tid, nbytes, name)

    def _access(self, kw, buf):
        assert buf.refs > 0, f"{kw} of freed {buf.name}"
        self.lines.append(f"{kw} {buf.id}")
        self.counts["access"] += 1

    def read(self, *bufs):
        for b in bufs:
            self._access("read", b)

    def rw(self, *bufs):
        for b in bufs:
            self._access("rw", b)

    def wd(self, *bufs):
        for b in bufs:
            self._access("wd", b)

    def compute(self, flops, nbytes):
        ns = kernel_ns(flops, nbytes)
        self.lines.append(f"compute {ns}")
        self.counts["compute"] += 1
        self.compute_ns += ns

    def phase(self, name):
        self.lines.append(f'phase "{name}"' if " " in name else f"phase {name}")
        self.counts["phase"] += 1

    def hold(self, buf):
        assert buf.refs > 0
        buf.refs += 1
        return buf

    def drop(self, buf):
        assert buf.refs > 0, f"double free of {buf.name}"
        buf.refs -= 1
        if buf.refs == 0:
            self.lines.append(f"free {buf.id}")
            self.counts["free"] += 1
            self.live -= buf.nbytes

    def let_go(self, *vs):
        """The Python variable is rebound or goes out of scope."""
        for v in vs:
            self.drop(v.buf)

    # ---- tensors ----
    def param(self, name, elems):
        v = Var(self.alloc(elems * FP32, name), param=True, shape_elems=elems)
        self.params.append((name, v))
        return v

    def buffer(self, name, nbytes):
        return Var(self.alloc(nbytes, name))

    def new(self, name, nbytes, requires_grad=True):
        return Var(self.alloc(nbytes, name), requires_grad=requires_grad)

    def node(self, inputs, outputs, saved, backward):
        """Record an autograd node; `saved` buffers gain a holder until it runs."""
        if not any(i.requires_grad for i in inputs):
            return
        for b in saved:
            self.hold(b)
        self.nodes.append(Node(inputs, outputs, saved, backward))

    def param_grad(self, p):
        """The buffer a backward writes p's gradient into: p.grad on its first write; a
        temporary to add into p.grad afterwards (a tied weight) on a later one."""
        if p.grad is None:
            p.grad = self.alloc(p.buf.nbytes, p.buf.name + ".grad")
            return p.grad
        return self.alloc(p.buf.nbytes, p.buf.name + ".grad_part")

    def param_grad_done(self, p, g):
        if g is not p.grad:
            self.read(g)
            self.rw(p.grad)
            self.compute(p.elems, 3 * p.buf.nbytes)
            self.drop(g)

    # ---- backward ----
    def backward(self, loss):
        grads = {id(loss): (loss, self.alloc(FP32, "loss.grad"))}
        self.wd(grads[id(loss)][1])  # torch.ones_like(loss)
        for node in reversed(self.nodes):
            gouts = []
            for o in node.outputs:
                entry = grads.pop(id(o), None)
                gouts.append(entry[1] if entry else None)
            if all(g is None for g in gouts):
                for b in node.saved:
                    self.drop(b)
                continue
            gins = node.backward(gouts)
            for g in gouts:
                if g is not None:
                    self.drop(g)
            for b in node.saved:
                self.drop(b)
            for inp, gi in zip(node.inputs, gins):
                if gi is None:
                    continue
                if not inp.requires_grad or inp.param:
                    self.drop(gi)
                    continue
                prev = grads.get(id(inp))
                if prev is None:
                    grads[id(inp)] = (inp, gi)
                else:  # accumulate in place into the first gradient
                    self.read(gi)
                    self.rw(prev[1])
                    self.compute(gi.nbytes / FP32, 3 * gi.nbytes)
                    self.drop(gi)
        for _, g in grads.values():
            self.drop(g)
        self.nodes = []

    # ---- optimizer ----
    def adam_step(self):
        self.phase("optimizer")
        for name, p in self.params:
            if p.grad is None:
                continue
            if name not in self.adam:  # lazily, at the first step: zeros_like(p) twice
                m = self.alloc(p.buf.nbytes, name + ".exp_avg")
                v = self.alloc(p.buf.nbytes, name + ".exp_avg_sq")
                self.adam[name] = (m, v)
                self.wd(m, v)
                self.compute(0, 2 * p.buf.nbytes)
            m, v = self.adam[name]
            self.read(p.grad)
            self.rw(m, v, p.buf)
            self.compute(12 * p.elems, 7 * p.buf.nbytes)  # reads g, m, v, w; writes m, v, w
        for _, p in self.params:  # zero_grad(set_to_none=True)
            if p.grad is not None:
                self.drop(p.grad)
                p.grad = None

    def teardown(self, persistent):
        self.phase("teardown")
        for name, p in self.params:
            if name in self.adam:
                self.drop(self.adam[name][0])
                self.drop(self.adam[name][1])
        for v in persistent:
            self.let_go(v)

    def text(self):
        s = self.summary()
        head = [self.lines[0], f"# {self.header}", "# written by scripts/make_model_traces.py; do not edit by hand",
                f"# {s['tensors']} tensors, {s['events']} events, working set {s['working_set']} bytes, "
                f"peak live {s['peak_live']} bytes, compute {s['compute_ns']} ns"]
        return "\n".join(head + self.lines[1:]) + "\n"

    def summary(self):
        c = self.counts
        return {"tensors": self.tensors, "events": sum(c.values()), "allocate": c["alloc"], "free": c["free"],
                "access": c["access"], "compute": c["compute"], "phase": c["phase"],
                "working_set": self.working_set, "peak_live": self.peak, "compute_ns": self.compute_ns,
                "live_at_end": self.live}


# ---- ops shared by both models ----------------------------------------------------------

def linear(t, name, x, rows, k, n, w, b):
    """y = x @ w^T + b (x: rows x k, w: n x k): saves x and w."""
    y = t.new(name, rows * n * FP32)
    t.read(x.buf, w.buf)
    if b is not None:
        t.read(b.buf)
    t.wd(y.buf)
    t.compute(2 * rows * k * n, (rows * k + k * n + rows * n) * FP32)

    def bwd(g):
        (gy,) = g
        gx = t.alloc(rows * k * FP32, name + ".in.grad") if x.requires_grad else None
        gw = t.param_grad(w)
        gb = t.param_grad(b) if b is not None else None
        t.read(gy, x.buf, w.buf)
        if gx is not None:
            t.wd(gx)
        t.wd(gw)
        if gb is not None:
            t.wd(gb)
        t.compute((4 if gx is not None else 2) * rows * k * n, (2 * rows * n + 2 * rows * k + 2 * k * n) * FP32)
        t.param_grad_done(w, gw)
        if gb is not None:
            t.param_grad_done(b, gb)
        return [gx, None, None] if b is not None else [gx, None]

    ins = [x, w] + ([b] if b is not None else [])
    t.node(ins, [y], [x.buf, w.buf], bwd)
    return y


def elementwise_out(t, name, x, elems, flops_per, saved_result=False, saved_input=False):
    """y = f(x), out of place (GELU saves its input, a softmax its result)."""
    y = t.new(name, elems * FP32)
    t.read(x.buf)
    t.wd(y.buf)
    t.compute(flops_per * elems, 2 * elems * FP32)

    def bwd(g):
        (gy,) = g
        gx = t.alloc(elems * FP32, name + ".in.grad")
        t.read(gy, *(b for b in saved))
        t.wd(gx)
        t.compute(2 * flops_per * elems, 3 * elems * FP32)
        return [gx]

    saved = ([y.buf] if saved_result else []) + ([x.buf] if saved_input else [])
    t.node([x], [y], saved, bwd)
    return y


def add(t, name, a, b, elems, inplace=False):
    """a + b (out of place) or a.add_(b): saves nothing; the gradient passes to both."""
    if inplace:
        t.read(b.buf)
        t.rw(a.buf)
        y = Var(t.hold(a.buf), requires_grad=True)
    else:
        y = t.new(name, elems * FP32)
        t.read(a.buf, b.buf)
        t.wd(y.buf)
    t.compute(elems, 3 * elems * FP32)

    def bwd(g):
        (gy,) = g
        return [t.hold(gy), t.hold(gy)]

    t.node([a, b], [y], [], bwd)
    return y


# ---- ResNet-18 ----------------------------------------------------------------------------

def resnet18():
    t = Trace("ResNet-18 (torchvision) training on ImageNet-shaped input: batch 32, 3x224x224, fp32, Adam, 3 iterations")
    N = 32
    t.phase("init")
    persistent = []

    def conv_param(name, cin, cout, k):
        p = t.param(name + ".weight", cout * cin * k * k)
        persistent.append(p)
        return p

    def bn_params(name, c):
        w = t.param(name + ".weight", c)
        b = t.param(name + ".bias", c)
        rm = t.buffer(name + ".running_mean", c * FP32)
        rv = t.buffer(name + ".running_var", c * FP32)
        persistent.extend([w, b, rm, rv])
        return (w, b, rm, rv, c)

    # the model's tensors, in torchvision's order
    stem = (conv_param("conv1", 3, 64, 7), bn_params("bn1", 64))
    blocks = []
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512], start=1):
        for bi in range(2):
            stride = 2 if (stage > 1 and bi == 0) else 1
            pre = f"layer{stage}.{bi}"
            c1 = conv_param(pre + ".conv1", cin, cout, 3)
            b1 = bn_params(pre + ".bn1", cout)
            c2 = conv_param(pre + ".conv2", cout, cout, 3)
            b2 = bn_params(pre + ".bn2", cout)
            ds = None
            if stride != 1 or cin != cout:
                ds = (conv_param(pre + ".downsample.0", cin, cout, 1), bn_params(pre + ".downsample.1", cout))
            blocks.append((pre, cin, cout, stride, c1, b1, c2, b2, ds))
            cin = cout
    fc_w = t.param("fc.weight", 1000 * 512)
    fc_b = t.param("fc.bias", 1000)
    persistent.extend([fc_w, fc_b])
    n_params = sum(p.elems for _, p in t.params)
    assert n_params == 11_689_512, n_params  # torchvision's resnet18
    for _, p in t.params:
        t.wd(p.buf)  # initialised (or loaded) once
    for v in persistent:
        if not v.param:
            t.wd(v.buf)

    def conv(name, x, w, cin, cout, k, stride, pad, hin):
        hout = (hin + 2 * pad - k) // stride + 1
        out_elems = N * cout * hout * hout
        in_elems = N * cin * hin * hin
        y = t.new(name + ".out", out_elems * FP32)
        t.read(x.buf, w.buf)
        t.wd(y.buf)
        flops = 2 * out_elems * cin * k * k
        t.compute(flops, (in_elems + out_elems + w.elems) * FP32)

        def bwd(g):
            (gy,) = g
            gx = t.alloc(in_elems * FP32, name + ".in.grad") if x.requires_grad else None
            gw = t.param_grad(w)
            t.read(gy, x.buf, w.buf)
            if gx is not None:
                t.wd(gx)
            t.wd(gw)
            t.compute(flops * (2 if gx is not None else 1),
                      (out_elems + in_elems * (2 if gx is not None else 1) + 2 * w.elems) * FP32)
            t.param_grad_done(w, gw)
            return [gx, None]

        t.node([x, w], [y], [x.buf, w.buf], bwd)
        return y, hout

    def bn(name, x, params, hw):
        w, b, rm, rv, c = params
        elems = N * c * hw * hw
        y = t.new(name + ".out", elems * FP32)
        stats = t.alloc(2 * c * FP32, name + ".save_mean_invstd")
        t.read(x.buf, w.buf, b.buf)
        t.rw(rm.buf, rv.buf)
        t.wd(y.buf, stats)
        t.compute(8 * elems, 3 * elems * FP32)  # statistics pass, then normalise

        def bwd(g):
            (gy,) = g
            gx = t.alloc(elems * FP32, name + ".in.grad")
            gw = t.param_grad(w)
            gb = t.param_grad(b)
            t.read(gy, x.buf, w.buf, stats)
            t.wd(gx, gw, gb)
            t.compute(12 * elems, 5 * elems * FP32)  # reductions over gy, gy*xhat, then gx
            t.param_grad_done(w, gw)
            t.param_grad_done(b, gb)
            return [gx, None, None]

        t.node([x, w, b], [y], [x.buf, w.buf, stats], bwd)
        t.drop(stats)  # held by the node alone
        return y

    def relu_(name, x, elems):
        """In place: saves its result (the same buffer)."""
        t.rw(x.buf)
        t.compute(elems, 2 * elems * FP32)
        y = Var(t.hold(x.buf), requires_grad=True)

        def bwd(g):
            (gy,) = g
            gx = t.alloc(elems * FP32, name + ".in.grad")
            t.read(gy, x.buf)
            t.wd(gx)
            t.compute(elems, 3 * elems * FP32)
            return [gx]

        t.node([x], [y], [x.buf], bwd)
        t.let_go(x)
        return y

    for it in range(ITERATIONS):
        t.phase(f"iter {it}")
        t.phase("forward")
        images = t.new("images", N * 3 * 224 * 224 * FP32, requires_grad=False)
        target = t.new("target", N * INT64, requires_grad=False)
        t.wd(images.buf, target.buf)  # copied from the host loader
        # stem
        x, h = conv("conv1", images, stem[0], 3, 64, 7, 2, 3, 224)
        y = bn("bn1", x, stem[1], h)
        t.let_go(x)
        x = relu_("relu", y, N * 64 * h * h)
        # max pool 3x3 / 2, pad 1: saves its input and int64 indices
        hp = (h + 2 - 3) // 2 + 1
        p_elems = N * 64 * hp * hp
        pool = t.new("maxpool.out", p_elems * FP32)
        idx = t.alloc(p_elems * INT64, "maxpool.indices")
        t.read(x.buf)
        t.wd(pool.buf, idx)
        t.compute(9 * p_elems, (N * 64 * h * h + p_elems) * FP32 + p_elems * INT64)

        def maxpool_bwd(g, x=x, idx=idx, in_elems=N * 64 * h * h, p_elems=p_elems):
            (gy,) = g
            gx = t.alloc(in_elems * FP32, "maxpool.in.grad")
            t.read(gy, idx)
            t.wd(gx)  # zero-filled and scattered in one kernel here
            t.compute(p_elems, (in_elems + p_elems) * FP32 + p_elems * INT64)
            return [gx]

        t.node([x], [pool], [x.buf, idx], maxpool_bwd)
        t.drop(idx)
        t.let_go(x)
        x, h = pool, hp
        # residual stages
        for (pre, cin_b, cout_b, stride, c1, b1, c2, b2, ds) in blocks:
            identity = x
            o, h2 = conv(pre + ".conv1", x, c1, cin_b, cout_b, 3, stride, 1, h)
            o2 = bn(pre + ".bn1", o, b1, h2)
            t.let_go(o)
            o3 = relu_(pre + ".relu1", o2, N * cout_b * h2 * h2)
            o4, _ = conv(pre + ".conv2", o3, c2, cout_b, cout_b, 3, 1, 1, h2)
            t.let_go(o3)
            o5 = bn(pre + ".bn2", o4, b2, h2)
            t.let_go(o4)
            if ds is not None:
                d, _ = conv(pre + ".downsample.0", x, ds[0], cin_b, cout_b, 1, stride, 0, h)
                identity = bn(pre + ".downsample.1", d, ds[1], h2)
                t.let_go(d)
            o6 = add(t, pre + ".add", o5, identity, N * cout_b * h2 * h2, inplace=True)
            t.let_go(o5)
            if ds is not None:
                t.let_go(identity)
            out = relu_(pre + ".relu2", o6, N * cout_b * h2 * h2)
            t.let_go(x)
            x, h = out, h2
        # head: global average pool (saves its input), fc, cross entropy
        feat = t.new("avgpool.out", N * 512 * FP32)
        t.read(x.buf)
        t.wd(feat.buf)
        t.compute(N * 512 * h * h, (N * 512 * h * h + N * 512) * FP32)

        def avgpool_bwd(g, elems=N * 512 * h * h):
            (gy,) = g
            gx = t.alloc(elems * FP32, "avgpool.in.grad")
            t.read(gy)
            t.wd(gx)
            t.compute(elems, (elems + N * 512) * FP32)
            return [gx]

        t.node([x], [feat], [x.buf], avgpool_bwd)
        t.let_go(x)
        logits = linear(t, "fc.out", feat, N, 512, 1000, fc_w, fc_b)
        t.let_go(feat)
        loss = cross_entropy(t, logits, target, N, 1000)
        t.phase("backward")
        t.backward(loss)
        t.adam_step()
        t.let_go(loss, logits, images, target)  # the loop's variables, rebound next iteration
    t.teardown(persistent)
    return t


def cross_entropy(t, logits, target, rows, classes):
    """log_softmax (saves its result) then nll_loss (saves the target)."""
    elems = rows * classes
    lsm = elementwise_out(t, "log_softmax.out", logits, elems, 4, saved_result=True)
    loss = t.new("loss", FP32)
    t.read(lsm.buf, target.buf)
    t.wd(loss.buf)
    t.compute(rows, elems * FP32)

    def bwd(g):
        (gy,) = g
        gx = t.alloc(elems * FP32, "nll_loss.in.grad")
        t.read(gy, target.buf)
        t.wd(gx)
        t.compute(rows, elems * FP32)
        return [gx, None]

    t.node([lsm, target], [loss], [target.buf], bwd)
    t.let_go(lsm)
    return loss


# ---- GPT-2 small --------------------------------------------------------------------------

def gpt2_small():
    B, T, C, H, L, V = 8, 1024, 768, 12, 12, 50257
    hs = C // H
    t = Trace("GPT-2 small (nanoGPT layout, tied lm_head) training: batch 8, seq 1024, 12 layers, hidden 768, "
              "12 heads, vocab 50257, fp32, eager attention, dropout 0, AdamW, 3 iterations")
    t.phase("init")
    persistent = []

    def P(name, elems):
        p = t.param(name, elems)
        persistent.append(p)
        return p

    wte = P("transformer.wte.weight", V * C)
    wpe = P("transformer.wpe.weight", T * C)
    layers = []
    for i in range(L):
        pre = f"transformer.h.{i}"
        layers.append({
            "pre": pre,
            "ln1": (P(pre + ".ln_1.weight", C), P(pre + ".ln_1.bias", C)),
            "attn_w": P(pre + ".attn.c_attn.weight", C * 3 * C), "attn_b": P(pre + ".attn.c_attn.bias", 3 * C),
            "proj_w": P(pre + ".attn.c_proj.weight", C * C), "proj_b": P(pre + ".attn.c_proj.bias", C),
            "ln2": (P(pre + ".ln_2.weight", C), P(pre + ".ln_2.bias", C)),
            "fc_w": P(pre + ".mlp.c_fc.weight", C * 4 * C), "fc_b": P(pre + ".mlp.c_fc.bias", 4 * C),
            "mproj_w": P(pre + ".mlp.c_proj.weight", 4 * C * C), "mproj_b": P(pre + ".mlp.c_proj.bias", C),
        })
        mask = t.buffer(pre + ".attn.bias", T * T * FP32)  # register_buffer: tril(ones(1024, 1024))
        persistent.append(mask)
        layers[-1]["mask"] = mask
    lnf = (P("transformer.ln_f.weight", C), P("transformer.ln_f.bias", C))
    n_params = sum(p.elems for _, p in t.params)
    assert n_params == 124_439_808, n_params  # GPT-2 small with wpe and biases (lm_head tied to wte)
    for v in persistent:
        t.wd(v.buf)

    rows = B * T

    def layernorm(name, x, wb):
        w, b = wb
        elems = rows * C
        y = t.new(name + ".out", elems * FP32)
        stats = t.alloc(2 * rows * FP32, name + ".mean_rstd")
        t.read(x.buf, w.buf, b.buf)
        t.wd(y.buf, stats)
        t.compute(8 * elems, 2 * elems * FP32)

        def bwd(g):
            (gy,) = g
            gx = t.alloc(elems * FP32, name + ".in.grad")
            gw = t.param_grad(w)
            gb = t.param_grad(b)
            t.read(gy, x.buf, w.buf, stats)
            t.wd(gx, gw, gb)
            t.compute(12 * elems, 3 * elems * FP32)
            t.param_grad_done(w, gw)
            t.param_grad_done(b, gb)
            return [gx, None, None]

        t.node([x, w, b], [y], [x.buf, w.buf, stats], bwd)
        t.drop(stats)
        return y

    def bmm(name, a, b, batch, m, k, n, out_elems):
        """A batched matmul per (batch, head): saves both operands."""
        y = t.new(name, out_elems * FP32)
        t.read(a.buf, b.buf)
        t.wd(y.buf)
        a_el, b_el = batch * m * k, batch * k * n
        t.compute(2 * batch * m * k * n, (a_el + b_el + out_elems) * FP32)

        def bwd(g):
            (gy,) = g
            ga = t.alloc(a_el * FP32, name + ".a.grad")
            gb = t.alloc(b_el * FP32, name + ".b.grad")
            t.read(gy, a.buf, b.buf)
            t.wd(ga, gb)
            t.compute(4 * batch * m * k * n, (2 * out_elems + 2 * a_el + 2 * b_el) * FP32)
            return [ga, gb]

        t.node([a, b], [y], [a.buf, b.buf], bwd)
        return y

    for it in range(ITERATIONS):
        t.phase(f"iter {it}")
        t.phase("forward")
        idx = t.new("idx", rows * INT64, requires_grad=False)
        targets = t.new("targets", rows * INT64, requires_grad=False)
        t.wd(idx.buf, targets.buf)
        pos = t.new("pos", T * INT64, requires_grad=False)
        t.wd(pos.buf)
        t.compute(0, T * INT64)  # arange
        # embeddings: tok_emb = wte[idx] (saves idx), pos_emb = wpe[pos]; x = tok + pos
        embs = []
        for (name, table, ids, n) in (("wte", wte, idx, rows), ("wpe", wpe, pos, T)):
            e = t.new(name + ".out", n * C * FP32)
            t.read(ids.buf, table.buf)
            t.wd(e.buf)
            t.compute(0, 2 * n * C * FP32)

            def emb_bwd(g, table=table, ids=ids, n=n, name=name):
                (gy,) = g
                gw = t.param_grad(table)
                t.read(gy, ids.buf)
                t.wd(gw)  # zero-filled, then index_add
                t.compute(n * C, (table.elems + 2 * n * C) * FP32)
                t.param_grad_done(table, gw)
                return [None, None]

            t.node([ids, table], [e], [ids.buf], emb_bwd)
            embs.append(e)
        x = add(t, "emb.add", embs[0], embs[1], rows * C)  # pos_emb broadcasts over the batch
        t.let_go(embs[0], embs[1], pos)
        for ly in layers:
            pre = ly["pre"]
            # attention
            a = layernorm(pre + ".ln_1", x, ly["ln1"])
            qkv = linear(t, pre + ".attn.c_attn.out", a, rows, C, 3 * C, ly["attn_w"], ly["attn_b"])
            t.let_go(a)
            # q, k, v = qkv.split(C, dim=2), views; their gradients are concatenated by SplitBackward
            q = Var(t.hold(qkv.buf), requires_grad=True)
            k = Var(t.hold(qkv.buf), requires_grad=True)
            v = Var(t.hold(qkv.buf), requires_grad=True)

            def split_bwd(g, name=pre + ".attn.c_attn.out"):
                gq, gk, gv = g
                gx = t.alloc(rows * 3 * C * FP32, name + ".grad")
                t.read(gq, gk, gv)
                t.wd(gx)
                t.compute(0, 6 * rows * C * FP32)
                return [gx]

            t.node([qkv], [q, k, v], [], split_bwd)
            t.let_go(qkv)
            att_elems = B * H * T * T
            s1 = bmm(pre + ".attn.scores", q, k, B * H, T, hs, T, att_elems)  # q @ k^T
            t.let_go(q, k)
            s2 = elementwise_out(t, pre + ".attn.scaled", s1, att_elems, 1)   # * 1/sqrt(hs)
            t.let_go(s1)
            # masked_fill(bias[:, :, :T, :T] == 0, -inf): the comparison makes a bool mask, saved
            m = t.alloc(T * T, pre + ".attn.mask_eq0")
            t.read(ly["mask"].buf)
            t.wd(m)
            t.compute(0, 5 * T * T)
            s3 = t.new(pre + ".attn.masked", att_elems * FP32)
            t.read(s2.buf, m)
            t.wd(s3.buf)
            t.compute(att_elems, 2 * att_elems * FP32)

            def mask_bwd(g, m=m, name=pre + ".attn.masked", n=att_elems):
                (gy,) = g
                gx = t.alloc(n * FP32, name + ".in.grad")
                t.read(gy, m)
                t.wd(gx)
                t.compute(n, 2 * n * FP32)
                return [gx]

            t.node([s2], [s3], [m], mask_bwd)
            t.drop(m)
            t.let_go(s2)
            p = elementwise_out(t, pre + ".attn.softmax", s3, att_elems, 5, saved_result=True)
            t.let_go(s3)
            y1 = bmm(pre + ".attn.pv", p, v, B * H, T, T, hs, rows * C)  # att @ v
            t.let_go(p, v)
            # y.transpose(1, 2).contiguous(): a copy; its gradient passes through
            y2 = t.new(pre + ".attn.merged", rows * C * FP32)
            t.read(y1.buf)
            t.wd(y2.buf)
            t.compute(0, 2 * rows * C * FP32)
            t.node([y1], [y2], [], lambda g: [t.hold(g[0])])
            t.let_go(y1)
            o = linear(t, pre + ".attn.c_proj.out", y2, rows, C, C, ly["proj_w"], ly["proj_b"])
            t.let_go(y2)
            x2 = add(t, pre + ".resid1", x, o, rows * C)
            t.let_go(x, o)
            # MLP
            a2 = layernorm(pre + ".ln_2", x2, ly["ln2"])
            hdn = linear(t, pre + ".mlp.c_fc.out", a2, rows, C, 4 * C, ly["fc_w"], ly["fc_b"])
            t.let_go(a2)
            gel = elementwise_out(t, pre + ".mlp.gelu", hdn, rows * 4 * C, 8, saved_input=True)
            t.let_go(hdn)
            mo = linear(t, pre + ".mlp.c_proj.out", gel, rows, 4 * C, C, ly["mproj_w"], ly["mproj_b"])
            t.let_go(gel)
            x = add(t, pre + ".resid2", x2, mo, rows * C)
            t.let_go(x2, mo)
        xf = layernorm("transformer.ln_f", x, lnf)
        t.let_go(x)
        logits = linear(t, "lm_head.out", xf, rows, C, V, wte, None)  # tied to wte, no bias
        t.let_go(xf)
        loss = cross_entropy(t, logits, targets, rows, V)
        t.phase("backward")
        t.backward(loss)
        t.adam_step()
        t.let_go(loss, logits, idx, targets)
    t.teardown(persistent)
    return t


MODELS = {"resnet18_train.tpt": resnet18, "gpt2_small_train.tpt": gpt2_small}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "tests", "data"))
    ap.add_argument("--check", action="store_true", help="compare with the files in --out-dir; exit 1 if any differs")
    ap.add_argument("--summary", action="store_true", help="print the figures only")
    args = ap.parse_args()
    status = 0
    for fname, make in MODELS.items():
        t = make()
        s = t.summary()
        assert s["live_at_end"] == 0, s
        text = t.text()
        path = os.path.join(args.out_dir, fname)
        print(f"{fname}: " + ", ".join(f"{k} {v}" for k, v in s.items()) + f", file {len(text)} bytes")
        if args.summary:
            continue
        if args.check:
            try:
                with open(path, encoding="ascii") as f:
                    same = f.read() == text
            except OSError:
                same = False
            if not same:
                print(f"{path} differs from what the script writes", file=sys.stderr)
                status = 1
            continue
        with open(path, "w", encoding="ascii") as f:
            f.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
