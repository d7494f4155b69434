"""Fused recurrent layers ``RNN``, ``LSTM``, ``GRU``: one ``F.RNN`` operator over the whole sequence.

Parameters are kept per layer and direction (``l0_i2h_weight``, ``r0_h2h_bias``, ...) as in
MXNet, and flattened into the operator's single ``parameters`` vector on every call: all weights
(layer by layer, direction by direction, ``i2h`` then ``h2h``), then all biases in the same order.
"""
from __future__ import annotations

import re

from ... import ndarray as nd
from ... import symbol as _symbol
from ...ndarray.ndarray import NDArray
from ..block import HybridBlock
from ..parameter import tensor_types

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _zeros(F, shape, ctx=None, dtype="float32"):
    if F is nd:
        return nd.zeros(shape, ctx=ctx, dtype=dtype)
    return F._internal._zeros(shape=shape, dtype=dtype)   # batch size 0: inferred from the data


class _RNNLayer(HybridBlock):
    """Shared by RNN, LSTM and GRU; ``layout`` is 'TNC' (default) or 'NTC'."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 mode, dtype, projection_size=None, h2r_weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise ValueError(f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']")
        self._hidden_size, self._num_layers, self._mode = hidden_size, num_layers, mode
        self._layout, self._dropout, self._dir = layout, dropout, 2 if bidirectional else 1
        self._input_size, self._dtype = input_size, dtype
        self._projection_size = projection_size or None
        self._initializers = dict(i2h_weight_initializer=i2h_weight_initializer,
                                  h2h_weight_initializer=h2h_weight_initializer,
                                  i2h_bias_initializer=i2h_bias_initializer,
                                  h2h_bias_initializer=h2h_bias_initializer)
        self._gates = _GATES[mode]
        ng, ni, nh = self._gates, input_size, hidden_size
        nr = self._projection_size or nh      # what the recurrence (and the next layer) sees
        for i in range(num_layers):
            for j in ["l", "r"][:self._dir]:
                self._register_param(f"{j}{i}_i2h_weight", (ng * nh, ni), i2h_weight_initializer)
                self._register_param(f"{j}{i}_h2h_weight", (ng * nh, nr), h2h_weight_initializer)
                self._register_param(f"{j}{i}_i2h_bias", (ng * nh,), i2h_bias_initializer)
                self._register_param(f"{j}{i}_h2h_bias", (ng * nh,), h2h_bias_initializer)
                if self._projection_size:
                    self._register_param(f"{j}{i}_h2r_weight", (nr, nh), h2r_weight_initializer)
            ni = nr * self._dir

    def _register_param(self, name, shape, init):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=self._dtype)
        setattr(self, name, p)
        return p

    def __repr__(self) -> str:
        shape = self.l0_i2h_weight.shape
        return (f"{type(self).__name__}({shape[1] or None} -> {self._hidden_size}, {self._layout}, "
                f"num_layers={self._num_layers}{', bidirectional' if self._dir == 2 else ''})")

    def _collect_params_with_prefix(self, prefix: str = ""):
        """Parameter-file names as MXNet 1.9.1 writes them for fused layers: the names of the
        equivalent unfused cells (``_unfused.0.i2h_weight``; ``_unfused.0.l_cell.i2h_weight`` when
        bidirectional), so files stay compatible with cell-based models."""
        if prefix:
            prefix += "."
        pattern = re.compile(r"(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")
        ret = {}
        for key, val in self._reg_params.items():
            d, layer, g, t = pattern.match(key).groups()
            cell = f"{d}_cell." if self._dir == 2 else ""
            ret[f"{prefix}_unfused.{layer}.{cell}{g}_{t}"] = val
        return ret

    def _unfuse(self):
        """The same network as a stack of cells sharing this layer's Parameters (by name):
        ``HybridSequentialRNNCell`` of ``l{i}_`` cells (``BidirectionalCell`` of ``l{i}_`` and
        ``r{i}_`` when bidirectional), with ``DropoutCell`` between layers when ``dropout``."""
        from . import cell_wrappers, rnn_cell  # noqa: PLC0415 - the cells import this package
        if self._projection_size:
            raise AssertionError("_unfuse does not support projection layer yet!")

        def make(prefix, input_size):
            kwargs = dict(self._initializers, input_size=input_size, prefix=prefix)
            if self._mode.startswith("rnn_"):
                return rnn_cell.RNNCell(self._hidden_size, activation=self._mode[4:], **kwargs)
            cls = rnn_cell.LSTMCell if self._mode == "lstm" else rnn_cell.GRUCell
            return cls(self._hidden_size, **kwargs)

        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                if self._dir == 2:
                    stack.add(cell_wrappers.BidirectionalCell(make(f"l{i}_", ni), make(f"r{i}_", ni)))
                else:
                    stack.add(make(f"l{i}_", ni))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(cell_wrappers.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def state_info(self, batch_size: int = 0):
        shape = (self._num_layers * self._dir, batch_size, self._hidden_size)
        n = 2 if self._mode == "lstm" else 1
        info = [{"shape": shape, "__layout__": "LNC", "dtype": self._dtype} for _ in range(n)]
        if self._projection_size:     # LSTMP: h has the projected size, c the hidden size
            info[0]["shape"] = shape[:2] + (self._projection_size,)
        return info

    def begin_state(self, batch_size: int = 0, func=None, **kwargs):
        """Zero initial states (``func(shape=..., **kwargs)`` makes each one when given)."""
        out = []
        for info in self.state_info(batch_size):
            info = {k: v for k, v in info.items() if k != "__layout__"}
            info.update(kwargs)
            out.append(func(**info) if func is not None else nd.zeros(**info))
        return out

    def infer_shape(self, inputs, *args) -> None:
        """The input size of the first layer comes from the data (the rest is known)."""
        ni = inputs.shape[2]
        for i in range(self._num_layers):
            for j in ["l", "r"][:self._dir]:
                getattr(self, f"{j}{i}_i2h_weight").shape = (self._gates * self._hidden_size, ni)
            ni = (self._projection_size or self._hidden_size) * self._dir

    def __call__(self, inputs, states=None, **kwargs):
        if getattr(self, "skip_states", None) is not (states is None):
            self._clear_cached_op()     # the traced graph's outputs depend on it
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = [nd.zeros(i["shape"], ctx=inputs.context, dtype=inputs.dtype)
                          for i in self.state_info(batch_size)]
            else:
                states = [_zeros(_symbol, i["shape"], dtype=i["dtype"]) for i in self.state_info(0)]
        if isinstance(states, tensor_types):
            states = [states]
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(self, F, inputs, states, **kwargs):
        if F is nd:
            batch_size = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch_size)):
                if state.shape != info["shape"]:
                    raise ValueError(f"Invalid recurrent state shape. Expecting {info['shape']}, got "
                                     f"{state.shape}.")
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        kinds = ("i2h", "h2h", "h2r") if self._projection_size else ("i2h", "h2h")
        params = [F.reshape(kwargs[f"{d}{layer}_{g}_{t}"], shape=(-1,)) for t in ("weight", "bias")
                  for layer in range(self._num_layers) for d in ["l", "r"][:self._dir]
                  for g in kinds if g != "h2r" or t == "weight"]
        params = F.concat(*params, dim=0)
        # States by keyword: the operator's argument list depends on `mode` (state_cell for lstm).
        named = dict(zip(("state", "state_cell"), states))
        rnn = F.RNN(data=inputs, parameters=params, **named, state_size=self._hidden_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2, p=self._dropout,
                    state_outputs=True, mode=self._mode, projection_size=self._projection_size)
        outputs, states = rnn[0], ([rnn[1], rnn[2]] if self._mode == "lstm" else [rnn[1]])
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs if self.skip_states else (outputs, states)



class RNN(_RNNLayer):
    """Elman RNN, ``h_t = activation(W_x x_t + b_x + W_h h_{t-1} + b_h)``; activation 'relu' or 'tanh'.

    Call ``layer(inputs)`` for the outputs only, ``layer(inputs, states)`` for ``(outputs, states)``.
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, dtype, **kwargs)


class LSTM(_RNNLayer):
    """Long short-term memory layer (gates in MXNet's order: input, forget, cell, output).

    With ``projection_size`` P (LSTMP) each layer projects its hidden state, ``r_t = W_r h_t``
    (``h2r_weight (P, H)``): the outputs and the first state have P features.
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", projection_size=None, h2r_weight_initializer=None,
                 dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", dtype, projection_size=projection_size,
                         h2r_weight_initializer=h2r_weight_initializer, **kwargs)


class GRU(_RNNLayer):
    """Gated recurrent unit layer (gates: reset, update, new)."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", dtype, **kwargs)
