"""``mx.operator.PythonOp`` / ``NumpyOp``: MXNet's first, deprecated way to write an operator in
Python, with numpy arrays in and out.

A ``NumpyOp`` instance overrides ``forward(in_data, out_data)``,
``backward(out_grad, in_data, out_data, in_grad)``, ``infer_shape``, ``list_arguments`` and
``list_outputs`` (the defaults: identity forward, a gradient of ones, one ``data`` argument and one
``output``); ``op.get_symbol(x, name=...)`` (or ``op(x)``) puts it in a graph. mxref runs it as a
custom operator (``mx.operator.Custom``) registered once per instance: the arrays are copied to
numpy, the methods fill the numpy outputs, and the results are written back as ``req`` says.
"""
from __future__ import annotations

import warnings
from typing import List

import numpy as np

from . import ndarray as _nd
from . import operator as _operator
from . import symbol as _sym

__all__ = ["PythonOp", "NumpyOp"]


class PythonOp:
    """Base class of operators implemented in Python (deprecated in MXNet: use ``CustomOp``)."""

    _ref_holder: List["PythonOp"] = []

    def __init__(self, need_top_grad: bool = True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn("PythonOp has been deprecated. Please use CustomOp", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A Symbol applying this operator to ``args`` (Symbols)."""
        raise NotImplementedError("Must override this")

    def forward(self, in_data, out_data):
        """Fill ``out_data`` from ``in_data`` (the default copies the first input)."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Fill ``in_grad`` (the default writes ones, whatever the head gradient)."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """``(argument shapes, output shapes)`` from the argument shapes (default: one like the input)."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        """Whether backward reads the head gradient (False for a loss layer)."""
        return self.need_top_grad_


class _NumpyCompute(_operator.CustomOp):
    """Runs a ``NumpyOp``'s methods on numpy copies of the arrays."""

    def __init__(self, op: "NumpyOp"):
        super().__init__()
        self.op = op

    def forward(self, is_train, req, in_data, out_data, aux):
        ins = [x.asnumpy() for x in in_data]
        outs = [np.zeros(y.shape, y.dtype) for y in out_data]
        self.op.forward(in_data=ins, out_data=outs)
        for i, (dst, val) in enumerate(zip(out_data, outs)):
            self.assign(dst, req[i], _nd.array(val, dtype=dst.dtype))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        grads = [np.zeros(g.shape, g.dtype) for g in in_grad]
        self.op.backward(out_grad=[g.asnumpy() for g in out_grad], in_data=[x.asnumpy() for x in in_data],
                         out_data=[y.asnumpy() for y in out_data], in_grad=grads)
        for i, (dst, val) in enumerate(zip(in_grad, grads)):
            self.assign(dst, req[i], _nd.array(val, dtype=dst.dtype))


class NumpyOp(PythonOp):
    """An operator whose computation is written in numpy (see the module doc)."""

    def get_symbol(self, *args, **kwargs):
        op_type = f"_numpy_op_{id(self)}"
        if self.info_ is None:
            op = self

            class _Prop(_operator.CustomOpProp):
                def __init__(self):
                    super().__init__(need_top_grad=op.need_top_grad())

                def list_arguments(self):
                    return op.list_arguments()

                def list_outputs(self):
                    return op.list_outputs()

                def infer_shape(self, in_shape):
                    ins, outs = op.infer_shape(in_shape)
                    return ins, outs, []

                def create_operator(self, ctx, shapes, dtypes):
                    return _NumpyCompute(op)

            _operator.register(op_type)(_Prop)
            self.info_ = _Prop
            PythonOp._ref_holder.append(self)
        return _sym.Custom(*args, op_type=op_type, **kwargs)
