"""The activation family's op cards: relu, sigmoid, tanh, softrelu, softsign, each written once.

A card holds one function's math: the forward (``forward(x, out)``, straight into ``out``), the
derivative and the second derivative. Two operators run every card:

* the unary elementwise op ``mx.nd.relu`` / ``sigmoid`` / ``tanh`` / ``softsign`` (registered
  below with ``elemwise.register_unary``; ``softrelu`` exists only as an act_type, as in MXNet);
* ``Activation(act_type=...)`` (``nn/activation.py``), which looks the card up by ``act_type``.

Derivatives are written through the output ``y`` where that is cheap (``d_y``), so the input can
be freed or overwritten; a unary op whose derivative is better from ``x`` (softsign) also has
``d_x``, and its ``_backward_<name>`` takes ``(ograd, x)``. Activation always takes
``(ograd, y)``. The second derivative ``d2_*(mk, h, z)`` builds ``h * d'(z)`` from graph nodes
(``mk`` is a ``d2.Builder``), where ``d(z)`` is the derivative the backward op multiplies by; so
``autograd.grad(..., create_graph=True)`` differentiates both ops' gradients again.

Kernels: numpy only (the reference); no fast kernel is registered for this family.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

import numpy as np

from .elemwise import register_unary, ufunc


class Card:
    """One activation function: ``forward``, ``d_y``/``d_x`` and ``d2_y``/``d2_x``; ``unary``
    says whether ``mx.nd.<name>`` exists, ``use`` which of ``x``/``y`` its backward takes."""

    __slots__ = ("name", "forward", "d_y", "d_x", "d2_y", "d2_x", "unary", "use", "math")

    def __init__(self, name: str, forward: Callable, *, d_y: Callable, d2_y: Callable,
                 d_x: Callable = None, d2_x: Callable = None, unary: bool = True, math: str = ""):
        self.name, self.forward, self.math = name, forward, math
        self.d_y, self.d_x, self.d2_y, self.d2_x = d_y, d_x, d2_y, d2_x
        self.unary, self.use = unary, ("x" if d_x is not None else "y")

    def derivative(self, use: str) -> Callable:
        return self.d_x if use == "x" else self.d_y

    def second_derivative(self, use: str) -> Optional[Callable]:
        return self.d2_x if use == "x" else self.d2_y


CARDS: Dict[str, Card] = {}


def card(c: Card) -> Card:
    CARDS[c.name] = c
    return c


# --- relu ------------------------------------------------------------------------------------

def _relu(x, out):
    return np.maximum(x, 0, out=out)


RELU = card(Card(
    "relu", _relu, math="y = max(x, 0)      dy/dx = [y > 0]       d2y/dx2 = 0",
    d_y=lambda y: y > 0,
    d2_y=lambda mk, h, y: mk("zeros_like", y)))                       # d = [y > 0] is flat


# --- sigmoid ---------------------------------------------------------------------------------

def _sigmoid(x, out):
    if out.dtype.kind != "f":
        return np.copyto(out, 1.0 / (1.0 + np.exp(-x.astype(np.float64))), casting="unsafe")
    np.negative(x, out=out)   # in steps inside ``out``: no temporaries, safe when out is x
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


SIGMOID = card(Card(
    "sigmoid", _sigmoid, math="y = 1 / (1 + e^-x)  dy/dx = y (1 - y)     d(y(1-y))/dy = 1 - 2y",
    d_y=lambda y: y * (1 - y),
    d2_y=lambda mk, h, y: mk("elemwise_mul", h, mk("_rminus_scalar", mk("_mul_scalar", y, scalar=2.0),
                                                   scalar=1.0))))


# --- tanh ------------------------------------------------------------------------------------

TANH = card(Card(
    "tanh", ufunc(np.tanh), math="y = tanh(x)         dy/dx = 1 - y^2       d(1-y^2)/dy = -2y",
    d_y=lambda y: 1 - y * y,
    d2_y=lambda mk, h, y: mk("elemwise_mul", h, mk("_mul_scalar", y, scalar=-2.0))))


# --- softrelu (Activation only) --------------------------------------------------------------

def _softrelu(x, out):
    return np.logaddexp(x, 0, out=out)  # log(1 + e^x) without overflow


SOFTRELU = card(Card(
    "softrelu", _softrelu, unary=False,
    math="y = log(1 + e^x)     dy/dx = 1 - e^-y      d(1-e^-y)/dy = e^-y",
    d_y=lambda y: -np.expm1(-y),
    d2_y=lambda mk, h, y: mk("elemwise_mul", h, mk("exp", mk("negative", y)))))


# --- softsign --------------------------------------------------------------------------------

def _softsign(x, out):
    return np.copyto(out, x / (1 + np.abs(x)), casting="unsafe")


SOFTSIGN = card(Card(
    "softsign", _softsign,
    math="y = x / (1 + |x|)    dy/dx = 1/(1+|x|)^2 = (1 - |y|)^2    d((1-|y|)^2)/dy = -2 sign(y)(1-|y|)",
    d_x=lambda x: 1.0 / np.square(1 + np.abs(x)),
    d_y=lambda y: np.square(1 - np.abs(y)),
    d2_y=lambda mk, h, y: mk("elemwise_mul", h, mk("_mul_scalar", mk(
        "elemwise_mul", mk("sign", y), mk("_rminus_scalar", mk("abs", y), scalar=1.0)), scalar=-2.0))))


for _c in CARDS.values():
    if _c.unary:
        register_unary(_c.name, _c.forward, _c.derivative(_c.use), _c.use, d2=_c.second_derivative(_c.use))

__all__ = ["Card", "CARDS"]
