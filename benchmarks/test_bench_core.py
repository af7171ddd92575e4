"""Core engine benchmarks: nbgrad against numpy and torch (CPU) on the same workloads, in one run.

Steady-state groups (`elementwise`, `reduce`, `scan`) call each library once before timing, so nbgrad's
compile is excluded; each timed call builds a fresh lazy expression from realized inputs and
realizes it, so the work is really done every time. The `compile` group times the first call
in a fresh process, with an empty and with a warm nbgrad kernel cache.

Run: python -m pytest benchmarks/ --benchmark-json=/tmp/bench.json && python benchmarks/report.py /tmp/bench.json
"""
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from test_bench_linalg import finish_nbgrad_warm_up

LIBS = ["nbgrad", "numpy", "torch"]
REPO_ROOT = Path(__file__).resolve().parents[1]
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# ---------------------------------------------------------------------------------------------
# Steady-state workloads: one row per workload, one implementation per library.
# Inputs are float32; `inputs` names the session fixture (conftest.py) they come from.
# ---------------------------------------------------------------------------------------------

def numpy_gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def numpy_softmax(m):
    e = np.exp(m - m.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def recurrence(h, step, steps: int = 20):
    for _ in range(steps): h = step(h)
    return h


@dataclass(frozen=True)
class Workload:
    inputs: str
    numpy: Callable
    torch: Callable
    nbgrad: Callable
    rtol: float
    atol: float


WORKLOADS = {
    "fma_relu": Workload(
        "vectors",
        numpy=lambda x, y, z: np.maximum(x * y + z, 0),
        torch=lambda x, y, z: torch.relu(x * y + z),
        nbgrad=lambda x, y, z: (x * y + z).relu(),
        rtol=1e-5, atol=1e-5),  # a fused multiply-add may round once where numpy rounds twice
    "gelu_tanh": Workload(
        "vectors",
        numpy=lambda x, y, z: numpy_gelu_tanh(x),
        torch=lambda x, y, z: F.gelu(x, approximate="tanh"),
        nbgrad=lambda x, y, z: x.gelu(),
        rtol=1e-4, atol=1e-5),
    # torch's default GELU; numpy has no erf, so its row is left out and math.erf gives the reference once
    "gelu_erf": Workload(
        "vectors",
        numpy=lambda x, y, z: 0.5 * x * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0))),
        torch=lambda x, y, z: F.gelu(x),
        nbgrad=lambda x, y, z: x.gelu(approximate="none"),
        rtol=1e-4, atol=1e-5),
    "sin_cos": Workload(
        "vectors",
        numpy=lambda x, y, z: np.sin(x) * np.cos(y),
        torch=lambda x, y, z: torch.sin(x) * torch.cos(y),
        nbgrad=lambda x, y, z: x.sin() * y.cos(),
        rtol=1e-5, atol=1e-6),
    "int_floordiv_const": Workload(
        "int_vectors",
        numpy=lambda x, y: x // np.int32(7),
        torch=lambda x, y: torch.div(x, 7, rounding_mode="floor"),
        nbgrad=lambda x, y: x // 7,
        rtol=0.0, atol=0.0),
    "int64_floordiv_const": Workload(
        "int_vectors",
        numpy=lambda x, y: x.astype(np.int64) // np.int64(7),
        torch=lambda x, y: torch.div(x.long(), 7, rounding_mode="floor"),
        nbgrad=lambda x, y: x.cast("int64") // 7,
        rtol=0.0, atol=0.0),
    "int_floordiv_mod": Workload(
        "int_vectors",
        numpy=lambda x, y: x // y + x % y,
        torch=lambda x, y: torch.div(x, y, rounding_mode="floor") + torch.remainder(x, y),
        nbgrad=lambda x, y: x // y + x % y,
        rtol=0.0, atol=0.0),
    "half_add": Workload(
        "half_vectors",
        numpy=lambda x, y: x + y,
        torch=lambda x, y: x + y,
        nbgrad=lambda x, y: x + y,
        rtol=0.0, atol=0.0),
    "small_fma_relu": Workload(
        "small_vectors",
        numpy=lambda x, y, z: np.maximum(x * y + z, 0),
        torch=lambda x, y, z: torch.relu(x * y + z),
        nbgrad=lambda x, y, z: (x * y + z).relu(),
        rtol=1e-5, atol=1e-5),
    "mid_scale": Workload(
        "mid_vectors",
        numpy=lambda x, y, z: x * np.float32(2.5),
        torch=lambda x, y, z: x * 2.5,
        nbgrad=lambda x, y, z: x * 2.5,
        rtol=0.0, atol=0.0),
    "tanh": Workload(
        "vectors",
        numpy=lambda x, y, z: np.tanh(x),
        torch=lambda x, y, z: torch.tanh(x),
        nbgrad=lambda x, y, z: x.tanh(),
        rtol=1e-6, atol=1e-7),
    # a small recurrence, where each op's fixed costs (building its graph) count more than its loop
    "small_tanh_recurrence": Workload(
        "small_recurrence",
        numpy=lambda h, w: recurrence(h, lambda x: np.tanh(x @ w)),
        torch=lambda h, w: recurrence(h, lambda x: torch.tanh(x @ w)),
        nbgrad=lambda h, w: recurrence(h, lambda x: (x @ w).tanh()),
        rtol=1e-4, atol=1e-5),
    "double_log_exp": Workload(
        "double_vectors",
        numpy=lambda x: np.log(np.exp(x) + 1),
        torch=lambda x: torch.log(torch.exp(x) + 1),
        nbgrad=lambda x: (x.exp() + 1).log(),
        rtol=1e-12, atol=0.0),
    # float64 transcendentals, numpy's default type: nbgrad's vectorized series against the C library's (numpy's sin)
    # and numpy's vector library (its log10)
    "double_sin_log10": Workload(
        "double_vectors",
        numpy=lambda x: np.sin(x * 3) + np.log10(np.abs(x) + 1),
        torch=lambda x: torch.sin(x * 3) + torch.log10(x.abs() + 1),
        nbgrad=lambda x: (x * 3).sin() + (x.abs() + 1).log10(),
        rtol=1e-12, atol=1e-15),
    "double_tanh_expm1": Workload(
        "double_vectors",
        numpy=lambda x: np.tanh(x) + np.expm1(x * 0.5),
        torch=lambda x: torch.tanh(x) + torch.expm1(x * 0.5),
        nbgrad=lambda x: x.tanh() + (x * 0.5).expm1(),
        rtol=1e-12, atol=1e-15),
    # numpy has no erf: torch in the same float64 gives the reference
    "double_erf": Workload(
        "double_vectors",
        numpy=lambda x: torch.erf(torch.from_numpy(x)).numpy(),
        torch=lambda x: torch.erf(x),
        nbgrad=lambda x: x.erf(),
        rtol=1e-14, atol=1e-16),
    "half_to_float": Workload(
        "half_vectors",
        numpy=lambda x, y: x.astype(np.float32),
        torch=lambda x, y: x.float(),
        nbgrad=lambda x, y: x.float(),
        rtol=0.0, atol=0.0),
    # atan2 and the inverse sines: vectorized series in nbgrad, the C library in numpy and torch
    "asin_atan2": Workload(
        "vectors",
        numpy=lambda x, y, z: np.arcsin(np.clip(x * 0.25, -1, 1)) + np.arctan2(y, z),
        torch=lambda x, y, z: torch.asin((x * 0.25).clamp(-1, 1)) + torch.atan2(y, z),
        nbgrad=lambda x, y, z: (x * 0.25).clip(-1, 1).asin() + y.atan2(z),
        rtol=1e-5, atol=1e-6),
    # special functions: erfinv of values in [-0.999, 0.999], digamma of values past 0.5. numpy has none, so its row is left
    # out and torch in float64 gives the reference
    "erfinv_digamma": Workload(
        "vectors",
        numpy=lambda x, y, z: (torch.erfinv((torch.from_numpy(x) * 0.25).clamp(-0.999, 0.999).double())
                               + torch.digamma(torch.from_numpy(y).double().abs() + 0.5)).numpy(),
        torch=lambda x, y, z: torch.erfinv((x * 0.25).clamp(-0.999, 0.999)) + torch.digamma(y.abs() + 0.5),
        nbgrad=lambda x, y, z: (x * 0.25).clip(-0.999, 0.999).erfinv() + (y.abs() + 0.5).digamma(),
        rtol=1e-5, atol=1e-5),
    "cat_axis0": Workload(
        "pieces",
        numpy=lambda *p: np.concatenate(p, axis=0),
        torch=lambda *p: torch.cat(p, dim=0),
        nbgrad=lambda *p: p[0].cat(*p[1:], dim=0),
        rtol=0.0, atol=0.0),
    "cat_axis1": Workload(
        "pieces",
        numpy=lambda *p: np.concatenate(p, axis=1),
        torch=lambda *p: torch.cat(p, dim=1),
        nbgrad=lambda *p: p[0].cat(*p[1:], dim=1),
        rtol=0.0, atol=0.0),
    # three pieces interleaved on a new last dim (points of x, y, z coordinates): rows of 3 elements to write
    "stack_last_dim": Workload(
        "pieces",
        numpy=lambda *p: np.stack(p[:3], axis=-1),
        torch=lambda *p: torch.stack(p[:3], dim=-1),
        nbgrad=lambda *p: p[0].stack(*p[1:3], dim=-1),
        rtol=0.0, atol=0.0),
    # pieces computed where they are joined: x * 2 + 1 and exp(y) side by side
    "cat_computed_axis1": Workload(
        "pieces",
        numpy=lambda *p: np.concatenate([p[0] * 2 + 1, np.exp(p[1])], axis=1),
        torch=lambda *p: torch.cat([p[0] * 2 + 1, p[1].exp()], dim=1),
        nbgrad=lambda *p: (p[0] * 2 + 1).cat(p[1].exp(), dim=1),
        rtol=1e-6, atol=0.0),
    # a transposed read: numpy and torch copy the view to row-major order, nbgrad's kernel writes it so
    "transpose_copy": Workload(
        "matrix",
        numpy=lambda m: np.ascontiguousarray(m.T),
        torch=lambda m: m.T.contiguous(),
        nbgrad=lambda m: m.T.contiguous(),
        rtol=0.0, atol=0.0),
    "channels_last_copy": Workload(
        "images",
        numpy=lambda x: np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
        torch=lambda x: x.permute(0, 2, 3, 1).contiguous(),
        nbgrad=lambda x: x.permute(0, 2, 3, 1).contiguous(),
        rtol=0.0, atol=0.0),
    # attention's heads merged back: (batch, heads, positions, features) to (batch, positions, heads * features)
    "heads_merged": Workload(
        "heads",
        numpy=lambda x: np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(16, 256, 512),
        torch=lambda x: x.transpose(1, 2).reshape(16, 256, 512),
        nbgrad=lambda x: x.transpose(1, 2).reshape(16, 256, 512).contiguous(),
        rtol=0.0, atol=0.0),
    "transpose_add": Workload(
        "matrix",
        numpy=lambda m: m.T + m,
        torch=lambda m: m.T + m,
        nbgrad=lambda m: m.T + m,
        rtol=0.0, atol=0.0),
    "sum_all": Workload(
        "vectors",
        numpy=lambda x, y, z: x.sum(),
        torch=lambda x, y, z: x.sum(),
        nbgrad=lambda x, y, z: x.sum(),
        # sum(|x|) is about 13.4M for 16M standard normals; allow 1e-5 of it for float32 accumulation
        rtol=0.0, atol=135.0),
    "sum_axis1": Workload(
        "matrix",
        numpy=lambda m: m.sum(axis=1),
        torch=lambda m: m.sum(dim=1),
        nbgrad=lambda m: m.sum(axis=1),
        rtol=1e-4, atol=1e-3),
    "sum_transposed_axis1": Workload(
        "matrix",
        numpy=lambda m: m.T.sum(axis=1),
        torch=lambda m: m.T.sum(dim=1),
        nbgrad=lambda m: m.T.sum(axis=1),
        rtol=1e-4, atol=1e-3),
    "max_axis0": Workload(
        "matrix",
        numpy=lambda m: m.max(axis=0),
        torch=lambda m: m.amax(dim=0),
        nbgrad=lambda m: m.max(axis=0),
        rtol=0.0, atol=0.0),
    "any_axis1": Workload(
        "matrix",
        numpy=lambda m: (m > 3).any(axis=1),
        torch=lambda m: (m > 3).any(dim=1),
        nbgrad=lambda m: (m > 3).any(axis=1),
        rtol=0.0, atol=0.0),
    "softmax_lastaxis": Workload(
        "matrix",
        numpy=numpy_softmax,
        torch=lambda m: torch.softmax(m, dim=-1),
        nbgrad=lambda m: m.softmax(axis=-1),
        rtol=1e-4, atol=1e-7),
    "softmax_transposed": Workload(
        "matrix",
        numpy=lambda m: numpy_softmax(m.T),
        torch=lambda m: torch.softmax(m.T, dim=-1),
        nbgrad=lambda m: m.T.softmax(axis=-1),
        rtol=1e-4, atol=1e-7),
    # attention's heads merged back, then a softmax over each position's 512 features
    "softmax_heads_merged": Workload(
        "heads",
        numpy=lambda x: numpy_softmax(x.transpose(0, 2, 1, 3).reshape(16, 256, 512)),
        torch=lambda x: torch.softmax(x.transpose(1, 2).reshape(16, 256, 512), dim=-1),
        nbgrad=lambda x: x.transpose(1, 2).reshape(16, 256, 512).softmax(-1),
        rtol=1e-5, atol=1e-8),
    # running sums of 4096 standard normals reach about 200; float32 accumulation (torch: double) drifts
    "cumsum_axis0": Workload(
        "matrix",
        numpy=lambda m: np.cumsum(m, axis=0),
        torch=lambda m: torch.cumsum(m, dim=0),
        nbgrad=lambda m: m.cumsum(axis=0),
        rtol=1e-4, atol=1e-3),
    "cumsum_axis1": Workload(
        "matrix",
        numpy=lambda m: np.cumsum(m, axis=1),
        torch=lambda m: torch.cumsum(m, dim=1),
        nbgrad=lambda m: m.cumsum(axis=1),
        rtol=1e-4, atol=1e-3),
    # running products of factors near 1 (nbgrad and torch multiply in float64, numpy in float32), maxima, and
    # log-sum-exps (numpy's logaddexp.accumulate) along the rows
    "cumprod_axis1": Workload(
        "matrix",
        numpy=lambda m: np.cumprod(m * np.float32(1e-3) + np.float32(1), axis=1),
        torch=lambda m: torch.cumprod(m * 1e-3 + 1, dim=1),
        nbgrad=lambda m: (m * 1e-3 + 1).cumprod(axis=1),
        rtol=1e-3, atol=1e-6),
    "cummax_axis1": Workload(
        "matrix",
        numpy=lambda m: np.maximum.accumulate(m, axis=1),
        torch=lambda m: torch.cummax(m, dim=1).values,
        nbgrad=lambda m: m.cummax(axis=1)[0],
        rtol=0.0, atol=0.0),
    "logcumsumexp_axis1": Workload(
        "matrix",
        numpy=lambda m: np.logaddexp.accumulate(m, axis=1),
        torch=lambda m: torch.logcumsumexp(m, dim=1),
        nbgrad=lambda m: m.logcumsumexp(axis=1),
        rtol=1e-4, atol=1e-4),
    # stable sorts (torch's stable=True, numpy's kind="stable"), as nbgrad's always is
    "sort_1m": Workload(
        "sort_inputs",
        numpy=lambda v, m: np.sort(v, kind="stable"),
        torch=lambda v, m: torch.sort(v, stable=True).values,
        nbgrad=lambda v, m: v.sort()[0],
        rtol=0.0, atol=0.0),
    "sort_rows": Workload(
        "sort_inputs",
        numpy=lambda v, m: np.sort(m, axis=1, kind="stable"),
        torch=lambda v, m: torch.sort(m, dim=1, stable=True).values,
        nbgrad=lambda v, m: m.sort(1)[0],
        rtol=0.0, atol=0.0),
    "argsort_columns": Workload(
        "sort_inputs",
        numpy=lambda v, m: np.argsort(m, axis=0, kind="stable"),
        torch=lambda v, m: torch.sort(m, dim=0, stable=True).indices,
        nbgrad=lambda v, m: m.argsort(0),
        rtol=0.0, atol=0.0),
    "topk_rows": Workload(
        "sort_inputs",
        numpy=lambda v, m: -np.sort(-m, axis=1)[:, :10],
        torch=lambda v, m: torch.topk(m, 10, dim=1).values,
        nbgrad=lambda v, m: m.topk(10, 1)[0],
        rtol=0.0, atol=0.0),
    "topk_1000_of_1m": Workload(
        "sort_inputs",
        numpy=lambda v, m: np.sort(v[np.argpartition(v, -1000)[-1000:]])[::-1],
        torch=lambda v, m: torch.topk(v, 1000).values,
        nbgrad=lambda v, m: v.topk(1000)[0],
        rtol=0.0, atol=0.0),
    "searchsorted": Workload(
        "search_inputs",
        numpy=lambda s, q: np.searchsorted(s, q),
        torch=lambda s, q: torch.searchsorted(s, q),
        nbgrad=lambda s, q: s.searchsorted(q),
        rtol=0.0, atol=0.0),
    # numpy has no CTC loss: torch's answer is the reference, and numpy's row is left out
    "ctc_loss": Workload(
        "ctc_inputs",
        numpy=lambda *args: F.ctc_loss(*map(torch.from_numpy, args), reduction="none").numpy(),
        torch=lambda *args: F.ctc_loss(*args, reduction="none"),
        nbgrad=lambda log_probs, *labels: log_probs.ctc_loss(*labels, reduction="none"),
        rtol=1e-4, atol=1e-4),
    # a classifier's loss read at each sample's class, and its gradient
    "nll_loss_grad": Workload(
        "class_scores",
        numpy=lambda scores, labels: gradient(lambda x: F.nll_loss(x, torch.from_numpy(labels)), torch.from_numpy(scores)).numpy(),
        torch=lambda scores, labels: gradient(lambda x: F.nll_loss(x, labels), scores),
        nbgrad=lambda scores, labels: gradient(lambda x: x.nll_loss(labels), scores),
        rtol=1e-6, atol=1e-9),
    # a ResNet stem's max-pool (3x3, stride 2, padding 1: overlapping windows) and its gradient
    "max_pool_overlapping_grad": Workload(
        "pool_images",
        numpy=lambda images, _: gradient(lambda x: F.max_pool2d(x, 3, 2, 1).square().sum(), torch.from_numpy(images)).numpy(),
        torch=lambda images, _: gradient(lambda x: F.max_pool2d(x, 3, 2, 1).square().sum(), images),
        nbgrad=lambda images, _: gradient(lambda x: x.max_pool2d(3, 2, padding=1).square().sum(), images),
        rtol=1e-6, atol=1e-6),
    # windows of uneven sizes (28 rows into 5 windows of 6 or 7) and the gradient
    "adaptive_avg_pool_uneven_grad": Workload(
        "pool_images",
        numpy=lambda _, images: gradient(lambda x: F.adaptive_avg_pool2d(x, 5).square().sum(), torch.from_numpy(images)).numpy(),
        torch=lambda _, images: gradient(lambda x: F.adaptive_avg_pool2d(x, 5).square().sum(), images),
        nbgrad=lambda _, images: gradient(lambda x: x.adaptive_avg_pool2d(5).square().sum(), images),
        rtol=1e-5, atol=1e-6),
    # the smaller maps upsampled 2x bilinearly (a U-Net decoder's step)
    "interpolate_bilinear_2x": Workload(
        "pool_images",
        numpy=lambda _, images: F.interpolate(torch.from_numpy(images), scale_factor=2, mode="bilinear").numpy(),
        torch=lambda _, images: F.interpolate(images, scale_factor=2, mode="bilinear"),
        nbgrad=lambda _, images: images.interpolate(scale_factor=2, mode="bilinear"),
        rtol=1e-5, atol=1e-5),
    # a U-Net decoder's upsampling (torch's nn.Upsample default, nearest) with its gradient
    "interpolate_nearest_2x_grad": Workload(
        "pool_images",
        numpy=lambda _, images: gradient(lambda x: F.interpolate(x, scale_factor=2).square().sum(), torch.from_numpy(images)).numpy(),
        torch=lambda _, images: gradient(lambda x: F.interpolate(x, scale_factor=2).square().sum(), images),
        nbgrad=lambda _, images: gradient(lambda x: x.interpolate(scale_factor=2, mode="nearest").square().sum(), images),
        rtol=1e-6, atol=1e-6),
    # causal attention as a training step computes it: the output, and the gradients of the queries, keys and values
    # (summed with it into one result)
    "attention_causal_grad": Workload(
        "attention_inputs",
        numpy=lambda *arrays: attention_step(*map(torch.from_numpy, arrays), F.scaled_dot_product_attention).numpy(),
        torch=lambda q, k, v, g: attention_step(q, k, v, g, F.scaled_dot_product_attention),
        nbgrad=lambda q, k, v, g: attention_step(q, k, v, g, lambda *t, is_causal: t[0].scaled_dot_product_attention(*t[1:], is_causal=is_causal)),
        rtol=1e-4, atol=1e-4),
}


def attention_step(q, k, v, g, attention):
    """Causal attention's output plus the gradients of q, k and v of the sum of output * g (torch tensors or nbgrad
    Tensors)."""
    for t in (q, k, v): t.requires_grad, t.grad = True, None
    out = attention(q, k, v, is_causal=True)
    (out * g).sum().backward()
    return out.detach() + q.grad + k.grad + v.grad


def gradient(loss, leaf):
    """d loss(leaf) / d leaf, for a torch tensor or an nbgrad Tensor (both take requires_grad and grad this way)."""
    leaf.requires_grad = True
    leaf.grad = None
    loss(leaf).backward()
    return leaf.grad


GROUPS = 8


def numpy_group_norm(x):
    g = x.reshape(x.shape[0], GROUPS, -1)
    centered = g - g.mean(axis=-1, keepdims=True)
    return (centered / np.sqrt((centered * centered).mean(axis=-1, keepdims=True) + 1e-5)).reshape(x.shape)


def numpy_layer_norm(x):
    centered = x - x.mean(axis=-1, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(axis=-1, keepdims=True) + 1e-5)


def nbgrad_group_norm(x):
    from nbgrad import nn
    return nn.GroupNorm(GROUPS, x.shape[1])(x)


WORKLOADS.update({
    "group_norm": Workload(
        "images",
        numpy=numpy_group_norm,
        torch=lambda x: F.group_norm(x, GROUPS),
        nbgrad=nbgrad_group_norm,
        rtol=1e-4, atol=1e-4),
    "layer_norm": Workload(
        "matrix",
        numpy=numpy_layer_norm,
        torch=lambda m: F.layer_norm(m, m.shape[-1:]),
        nbgrad=lambda m: m.layernorm(),
        rtol=1e-4, atol=1e-4),
})


def numpy_index_add(nodes, targets, messages):
    out = nodes.copy()
    np.add.at(out, targets, messages)
    return out


def numpy_embedding_grad(table, tokens, grad):
    out = np.zeros_like(table)
    np.add.at(out, tokens, grad)
    return out


WORKLOADS.update({
    "gather_1m_by_100k": Workload(
        "gather_inputs",
        numpy=lambda x, idx: x[idx],
        torch=lambda x, idx: x[idx],
        nbgrad=lambda x, idx: x[idx],
        rtol=0.0, atol=0.0),
    # one column of a matrix at row indices: a strided read that numpy and torch also do without a copy
    "column_gather": Workload(
        "column_inputs",
        numpy=lambda m, idx: m[idx, 1],
        torch=lambda m, idx: m[idx, 1],
        nbgrad=lambda m, idx: m[idx, 1],
        rtol=0.0, atol=0.0),
    "embedding_lookup": Workload(
        "embedding_inputs",
        numpy=lambda table, tokens, grad: table[tokens],
        torch=lambda table, tokens, grad: table[tokens],
        nbgrad=lambda table, tokens, grad: table[tokens],
        rtol=0.0, atol=0.0),
    # the same 512 columns (int64 indices, repeats included) of each row of a 1024x1024 float32 matrix
    "column_select": Workload(
        "matrix_indices",
        numpy=lambda m, columns, rows_order, labels: m[:, columns],
        torch=lambda m, columns, rows_order, labels: m.index_select(1, columns),
        nbgrad=lambda m, columns, rows_order, labels: m[:, columns],
        rtol=0.0, atol=0.0),
    # each row of the matrix read in its own order (a sort's values from its indices), and one element of each row
    # picked by a label (a classifier's scores of its targets)
    "gather_rows": Workload(
        "matrix_indices",
        numpy=lambda m, columns, rows_order, labels: np.take_along_axis(m, rows_order, 1),
        torch=lambda m, columns, rows_order, labels: m.gather(1, rows_order),
        nbgrad=lambda m, columns, rows_order, labels: m.gather(1, rows_order),
        rtol=0.0, atol=0.0),
    "gather_labels": Workload(
        "matrix_indices",
        numpy=lambda m, columns, rows_order, labels: np.take_along_axis(m, labels, 1),
        torch=lambda m, columns, rows_order, labels: m.gather(1, labels),
        nbgrad=lambda m, columns, rows_order, labels: m.gather(1, labels),
        rtol=0.0, atol=0.0),
    # basic indices of a small matrix, copied out: every other column of rows 2 to 9, then its row 3 (where each
    # call's fixed costs, building the views, count more than the copy)
    "small_basic_indices": Workload(
        "small_matrix",
        numpy=lambda m: m[2:10, ::2][3].copy(),
        torch=lambda m: m[2:10, ::2][3].clone(),
        nbgrad=lambda m: m[2:10, ::2][3],
        rtol=0.0, atol=0.0),
    # a graph's messages summed into their target nodes, added to the nodes' features (numpy: np.add.at)
    "index_add_rows": Workload(
        "graph_messages",
        numpy=lambda nodes, targets, messages: numpy_index_add(nodes, targets, messages),
        torch=lambda nodes, targets, messages: nodes.index_add(0, targets, messages),
        nbgrad=lambda nodes, targets, messages: nodes.index_add(0, targets, messages),
        rtol=1e-4, atol=1e-4),
    # the lookup's gradient: every row a token reads gets that token's gradient added (numpy: np.add.at)
    "embedding_grad": Workload(
        "embedding_inputs",
        numpy=numpy_embedding_grad,
        torch=lambda table, tokens, grad: gradient(lambda t: (t[tokens] * grad).sum(), table),
        nbgrad=lambda table, tokens, grad: gradient(lambda t: (t[tokens] * grad).sum(), table),
        rtol=1e-5, atol=1e-5),
})


def to_library(lib, array):
    if lib == "numpy":
        return array
    if lib == "torch":
        return torch.from_numpy(array)
    from nbgrad import Tensor
    return Tensor(array, device="CPU").realize()


def to_numpy(lib, result):
    if lib == "torch":
        return result.numpy()
    if lib == "nbgrad":
        return result.numpy()
    return np.asarray(result)


_numpy_results = {}


def numpy_result(name, arrays):
    """The numpy implementation's output, the reference the other libraries are checked against."""
    if name not in _numpy_results:
        _numpy_results[name] = np.asarray(WORKLOADS[name].numpy(*arrays))
    return _numpy_results[name]


def bench_workload(benchmark, request, lib, name):
    workload = WORKLOADS[name]
    arrays = request.getfixturevalue(workload.inputs)
    args = [to_library(lib, a) for a in arrays]
    fn = getattr(workload, lib)
    if lib == "nbgrad":
        def call():
            return fn(*args).realize()
    else:
        def call():
            return fn(*args)

    # warm-up: compiles nbgrad's kernels (or loads them from disk) and checks the answer
    result = to_numpy(lib, call())
    if lib != "numpy":
        np.testing.assert_allclose(result, numpy_result(name, arrays), rtol=workload.rtol,
                                   atol=workload.atol, err_msg=f"{lib} {name} differs from numpy")
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, call)
    benchmark(call)


# ---------------------------------------------------------------------------------------------
# elementwise: 16M float32 (int32 for the integer divisions, float16 for the half ones, float64 for the double
# one), and 64K float32 for the small one
# ---------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_fma_relu(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "fma_relu")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_gelu_tanh(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "gelu_tanh")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_elementwise_gelu_erf(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "gelu_erf")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_sin_cos(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "sin_cos")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_int_floordiv_const(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "int_floordiv_const")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_int64_floordiv_const(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "int64_floordiv_const")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_int_floordiv_mod(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "int_floordiv_mod")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_half_add(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "half_add")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_half_to_float(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "half_to_float")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_small_fma_relu(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "small_fma_relu")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_mid_scale(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "mid_scale")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_tanh(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "tanh")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_small_tanh_recurrence(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "small_tanh_recurrence")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_double_log_exp(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "double_log_exp")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_double_sin_log10(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "double_sin_log10")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_double_tanh_expm1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "double_tanh_expm1")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_elementwise_double_erf(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "double_erf")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", LIBS)
def test_elementwise_asin_atan2(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "asin_atan2")


@pytest.mark.benchmark(group="elementwise")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_elementwise_erfinv_digamma(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "erfinv_digamma")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_cat_axis0(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "cat_axis0")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_cat_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "cat_axis1")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_stack_last_dim(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "stack_last_dim")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_cat_computed_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "cat_computed_axis1")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_transpose_copy(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "transpose_copy")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_channels_last_copy(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "channels_last_copy")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_heads_merged(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "heads_merged")


@pytest.mark.benchmark(group="movement")
@pytest.mark.parametrize("lib", LIBS)
def test_movement_transpose_add(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "transpose_add")


# ---------------------------------------------------------------------------------------------
# reduce: 16M float32 to a scalar, and along each axis / softmax of 4096x4096 float32 and of its transpose
# ---------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_sum_all(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "sum_all")


@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_sum_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "sum_axis1")


@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_sum_transposed_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "sum_transposed_axis1")


@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_max_axis0(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "max_axis0")


@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_any_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "any_axis1")


@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_softmax_lastaxis(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "softmax_lastaxis")


@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_softmax_transposed(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "softmax_transposed")


@pytest.mark.benchmark(group="reduce")
@pytest.mark.parametrize("lib", LIBS)
def test_reduce_softmax_heads_merged(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "softmax_heads_merged")


# ---------------------------------------------------------------------------------------------
# norm: GroupNorm (8 groups) of 16x64x56x56 float32, layer norm of the rows of 4096x4096 float32
# ---------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="norm")
@pytest.mark.parametrize("lib", LIBS)
def test_norm_group_norm(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "group_norm")


@pytest.mark.benchmark(group="norm")
@pytest.mark.parametrize("lib", LIBS)
def test_norm_layer_norm(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "layer_norm")


# ---------------------------------------------------------------------------------------------
# scan: running sum along each axis of 4096x4096 float32
# ---------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("lib", LIBS)
def test_scan_cumsum_axis0(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "cumsum_axis0")


@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("lib", LIBS)
def test_scan_cumsum_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "cumsum_axis1")


@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("lib", LIBS)
def test_scan_cumprod_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "cumprod_axis1")


@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("lib", LIBS)
def test_scan_cummax_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "cummax_axis1")


@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("lib", LIBS)
def test_scan_logcumsumexp_axis1(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "logcumsumexp_axis1")


@pytest.mark.benchmark(group="sort")
@pytest.mark.parametrize("lib", LIBS)
def test_sort_1m(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "sort_1m")


@pytest.mark.benchmark(group="sort")
@pytest.mark.parametrize("lib", LIBS)
def test_sort_rows(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "sort_rows")


@pytest.mark.benchmark(group="sort")
@pytest.mark.parametrize("lib", LIBS)
def test_sort_argsort_columns(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "argsort_columns")


@pytest.mark.benchmark(group="sort")
@pytest.mark.parametrize("lib", LIBS)
def test_sort_topk_rows(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "topk_rows")


@pytest.mark.benchmark(group="sort")
@pytest.mark.parametrize("lib", LIBS)
def test_sort_topk_1000_of_1m(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "topk_1000_of_1m")


@pytest.mark.benchmark(group="sort")
@pytest.mark.parametrize("lib", LIBS)
def test_sort_searchsorted(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "searchsorted")


@pytest.mark.benchmark(group="loss")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_loss_ctc(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "ctc_loss")


@pytest.mark.benchmark(group="pool")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_pool_max_3x3_stride2_forward_backward(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "max_pool_overlapping_grad")


@pytest.mark.benchmark(group="pool")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_pool_adaptive_avg_uneven_forward_backward(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "adaptive_avg_pool_uneven_grad")


@pytest.mark.benchmark(group="pool")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_pool_interpolate_bilinear_2x(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "interpolate_bilinear_2x")


@pytest.mark.benchmark(group="pool")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_pool_interpolate_nearest_2x_forward_backward(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "interpolate_nearest_2x_grad")


@pytest.mark.benchmark(group="attention")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_attention_causal_forward_backward(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "attention_causal_grad")


@pytest.mark.benchmark(group="loss")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_loss_nll_forward_backward(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "nll_loss_grad")


# ---------------------------------------------------------------------------------------------
# indexing: x[idx] with 100k indices into 1M float32; the same columns of every row, a gather of every element and
# one of each row, of a 1024x1024 matrix; an embedding table (50000 x 256) read by a (64, 128) token grid, and the
# gradient of that read
# ---------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_gather_1m_by_100k(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "gather_1m_by_100k")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_column_gather(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "column_gather")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_column_select(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "column_select")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_gather_rows(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "gather_rows")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_gather_labels(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "gather_labels")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_embedding_lookup(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "embedding_lookup")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_embedding_grad(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "embedding_grad")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_index_add_rows(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "index_add_rows")


@pytest.mark.benchmark(group="indexing")
@pytest.mark.parametrize("lib", LIBS)
def test_indexing_small_basic_indices(benchmark, request, lib):
    bench_workload(benchmark, request, lib, "small_basic_indices")


# ---------------------------------------------------------------------------------------------
# python: what a script does element by element: a tensor made from a Python list of 1M floats; 1000 elements
# read one at a time with x[i].item(); 1000 elements written one at a time with z[i] = 1.5
# ---------------------------------------------------------------------------------------------
PYTHON_LOOP = 1000


@pytest.fixture(scope="module")
def python_floats():
    return np.random.default_rng(12).standard_normal(1 << 20).tolist()


def from_list(lib, values):
    if lib == "numpy": return np.array(values, dtype=np.float32)
    if lib == "torch": return torch.tensor(values, dtype=torch.float32)
    from nbgrad import Tensor
    return Tensor(values)


def python_vector(lib):
    """A computed float32 vector of PYTHON_LOOP elements, in each library's own type."""
    return to_library(lib, np.arange(PYTHON_LOOP, dtype=np.float32) * np.float32(0.5))


@pytest.mark.benchmark(group="python")
@pytest.mark.parametrize("lib", LIBS)
def test_python_from_list_1m(benchmark, lib, python_floats):
    np.testing.assert_array_equal(to_numpy(lib, from_list(lib, python_floats)), np.array(python_floats, dtype=np.float32))
    benchmark(from_list, lib, python_floats)


@pytest.mark.benchmark(group="python")
@pytest.mark.parametrize("lib", LIBS)
def test_python_item_loop(benchmark, lib):
    x = python_vector(lib)

    def read():
        return [x[i].item() for i in range(PYTHON_LOOP)]
    assert read() == (np.arange(PYTHON_LOOP, dtype=np.float32) * np.float32(0.5)).tolist()
    benchmark(read)


@pytest.mark.benchmark(group="python")
@pytest.mark.parametrize("lib", LIBS)
def test_python_setitem_loop(benchmark, lib):
    z = python_vector(lib)

    def write():
        for i in range(PYTHON_LOOP): z[i] = 1.5
    write()
    assert (to_numpy(lib, z) == 1.5).all()
    benchmark(write)


# ---------------------------------------------------------------------------------------------
# compile: first call in a fresh process.
# The child makes its inputs, imports the library, then times from there to the first result
# of relu(x*y+z) (or of rand, with a warm cache) on 1M float32 and prints the seconds. The benchmark records the child's number
# (not the process start-up or the imports) through a clock that advances by what the child
# reported.
# ---------------------------------------------------------------------------------------------

FIRST_CALL_SIZE = 1 << 20
FIRST_CALL_ROUNDS = 3

FIRST_CALL_SCRIPT = r"""
import json, os, sys, time
lib, n, workload = sys.argv[1], int(sys.argv[2]), sys.argv[3]
import numpy as np
rng = np.random.default_rng(0)
x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
info = {}
if lib == "nbgrad":
    import nbgrad
    from nbgrad import Tensor
    def first_call():
        if workload == "rand": return Tensor.rand(n, device="CPU").numpy()
        a, b, c = (Tensor(v, device="CPU") for v in (x, y, z))
        return (a * b + c).relu().numpy()
elif lib == "torch":
    import torch
    torch.set_num_threads(os.cpu_count())
    def first_call():
        if workload == "rand": return torch.rand(n).numpy()
        a, b, c = (torch.from_numpy(v) for v in (x, y, z))
        return torch.relu(a * b + c).numpy()
else:
    def first_call():
        if workload == "rand": return rng.random(n, dtype=np.float32)
        return np.maximum(x * y + z, 0)
start = time.perf_counter()
out = first_call()
info["first_call_s"] = time.perf_counter() - start
start = time.perf_counter()
first_call()
info["second_call_s"] = time.perf_counter() - start
if workload == "rand":   # uniform draws: the right count, all in [0, 1), mean near 1/2
    valid = out.shape == (n,) and out.min() >= 0 and out.max() < 1 and abs(float(out.mean()) - 0.5) < 0.01
    info["max_abs_err"] = 0.0 if valid else float("inf")
else:
    info["max_abs_err"] = float(np.max(np.abs(out - np.maximum(x * y + z, 0))))
if lib == "nbgrad":
    from nbgrad.helpers import GlobalCounters
    info["compiles"] = GlobalCounters.compile_count
    info["disk_cache_hits"] = GlobalCounters.disk_cache_hits
print("FIRST_CALL " + json.dumps(info))
"""

_child_seconds = 0.0


def child_reported_clock():
    """A benchmark timer that moves only by the seconds the child process reported."""
    return _child_seconds


def run_first_call(lib, cache_dir, workload):
    global _child_seconds
    env = dict(os.environ)
    env["NBGRAD_CACHE_DIR"] = str(cache_dir)
    env.pop("NUMBA_CACHE_DIR", None)  # numba keeps its cache beside the kernel files, inside cache_dir
    env["CPU"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-c", FIRST_CALL_SCRIPT, lib, str(FIRST_CALL_SIZE), workload],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{lib} first-call child failed:\n{proc.stdout}\n{proc.stderr}"
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("FIRST_CALL ")][-1]
    info = json.loads(line[len("FIRST_CALL "):])
    assert info["max_abs_err"] <= 1e-5, f"{lib} first call gave a wrong result: {info}"
    _child_seconds += info["first_call_s"]
    return info


def bench_first_call(benchmark, lib, warm_cache, workload="relu"):
    with tempfile.TemporaryDirectory(prefix="nbgrad-bench-") as root:
        fresh_dirs = itertools.count()

        def setup():
            # empty cache: a new folder each round; warm cache: the one folder filled beforehand
            cache_dir = Path(root) / ("warm" if warm_cache else f"empty{next(fresh_dirs)}")
            cache_dir.mkdir(exist_ok=True)
            return (cache_dir,), {}

        if warm_cache:
            run_first_call(lib, setup()[0][0], workload)  # fills the cache; not timed
        infos = []
        benchmark.pedantic(lambda d: infos.append(run_first_call(lib, d, workload)), setup=setup,
                           rounds=FIRST_CALL_ROUNDS)
    benchmark.extra_info["size"] = FIRST_CALL_SIZE
    for key in ("second_call_s", "compiles", "disk_cache_hits"):
        if key in infos[-1]:
            benchmark.extra_info[key] = infos[-1][key]


@pytest.mark.benchmark(group="compile", timer=child_reported_clock)
@pytest.mark.parametrize("lib", LIBS)
def test_first_call_empty_cache(benchmark, lib):
    bench_first_call(benchmark, lib, warm_cache=False)


@pytest.mark.benchmark(group="compile", timer=child_reported_clock)
@pytest.mark.parametrize("lib", LIBS)
def test_first_call_warm_cache(benchmark, lib):
    bench_first_call(benchmark, lib, warm_cache=True)


@pytest.mark.benchmark(group="compile", timer=child_reported_clock)
@pytest.mark.parametrize("lib", LIBS)
def test_first_call_rand_warm_cache(benchmark, lib):
    """Tensor.rand(1M): the random generator's cached machine code loaded in a fresh process."""
    bench_first_call(benchmark, lib, warm_cache=True, workload="rand")
