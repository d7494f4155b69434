"""Inception v3 (Szegedy et al. 2015) for 299x299 inputs: concatenated branches of factorized convolutions."""
from __future__ import annotations

from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["Inception3", "inception_v3"]

_SETTING = ("channels", "kernel_size", "strides", "padding")


def _conv(**kwargs):
    """Convolution without bias, BatchNorm (epsilon 1e-3), ReLU: Inception's basic unit."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(use_bias=False, **kwargs), nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return out


def _branch(pool, *convs):
    """An optional pool ('avg' 3x3/1, 'max' 3x3/2), then convolutions as (channels, kernel, stride, pad)."""
    out = nn.HybridSequential(prefix="")
    if pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        out.add(_conv(**{k: v for k, v in zip(_SETTING, setting) if v is not None}))
    return out


def _concurrent(prefix, *branches):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(*[b() if callable(b) else b for b in branches])
    return out


def _split(first, second):
    """Two branches over one input, concatenated (the 1x3 / 3x1 fan-out of the E modules)."""
    out = HybridConcurrent(axis=1, prefix="")
    out.add(first, second)
    return out


def _module_a(pool_features, prefix):
    return _concurrent(prefix, lambda: _branch(None, (64, 1, None, None)),
                       lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
                       lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
                       lambda: _branch("avg", (pool_features, 1, None, None)))


def _module_b(prefix):
    return _concurrent(prefix, lambda: _branch(None, (384, 3, 2, None)),
                       lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
                       lambda: _branch("max"))


def _module_c(c7, prefix):
    """7x7 convolutions factorized into 1x7 and 7x1."""
    return _concurrent(prefix, lambda: _branch(None, (192, 1, None, None)),
                       lambda: _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                                       (192, (7, 1), None, (3, 0))),
                       lambda: _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                                       (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                                       (192, (1, 7), None, (0, 3))),
                       lambda: _branch("avg", (192, 1, None, None)))


def _module_d(prefix):
    return _concurrent(prefix, lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
                       lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                                       (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
                       lambda: _branch("max"))


def _module_e(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (320, 1, None, None)))
        b3 = nn.HybridSequential(prefix="")
        b3.add(_branch(None, (384, 1, None, None)),
               _split(_branch(None, (384, (1, 3), None, (0, 1))), _branch(None, (384, (3, 1), None, (1, 0)))))
        out.add(b3)
        b3dbl = nn.HybridSequential(prefix="")
        b3dbl.add(_branch(None, (448, 1, None, None), (384, 3, None, 1)),
                  _split(_branch(None, (384, (1, 3), None, (0, 1))),
                         _branch(None, (384, (3, 1), None, (1, 0)))))
        out.add(b3dbl)
        out.add(_branch("avg", (192, 1, None, None)))
    return out


class Inception3(HybridBlock):
    """Inception v3 without the auxiliary classifier, as MXNet's model zoo has it."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            f = self.features = nn.HybridSequential(prefix="")
            f.add(_conv(channels=32, kernel_size=3, strides=2), _conv(channels=32, kernel_size=3),
                  _conv(channels=64, kernel_size=3, padding=1), nn.MaxPool2D(pool_size=3, strides=2),
                  _conv(channels=80, kernel_size=1), _conv(channels=192, kernel_size=3),
                  nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_module_a(32, "A1_"), _module_a(64, "A2_"), _module_a(64, "A3_"), _module_b("B_"),
                  _module_c(128, "C1_"), _module_c(160, "C2_"), _module_c(160, "C3_"), _module_c(192, "C4_"),
                  _module_d("D_"), _module_e("E1_"), _module_e("E2_"))
            f.add(nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=cpu(), root=None, **kwargs):
    return load_pretrained(Inception3(**kwargs), "inceptionv3", pretrained, ctx, root)
