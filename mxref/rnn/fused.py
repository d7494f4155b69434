"""``FusedRNNCell``: a whole multi-layer (bidirectional) RNN as one ``RNN`` operator node.

Its weights are one flat Variable ``<prefix>parameters`` in the ``RNN`` operator's layout (every
layer's and direction's ``W_x``, ``W_h`` first, then every ``b_x``, ``b_h``; gates in MXNet's
order). ``unpack_weights`` cuts it into the per-gate arrays the unfused cells use,
``<prefix><l|r><layer>_<i2h|h2h><gate>_<weight|bias>``, and ``pack_weights`` puts them back, so a
model trained fused can be stepped by ``unfuse()``'s stack of cells, and the other way round.
"""
from __future__ import annotations

import warnings

from .. import initializer as init
from .. import ndarray, symbol
from .base_cell import BaseRNNCell, _normalize_sequence
from .cells import GRUCell, LSTMCell, RNNCell
from .wrappers import BidirectionalCell, DropoutCell, SequentialRNNCell

_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"]}


class FusedRNNCell(BaseRNNCell):
    """A fused RNN: one ``RNN`` node over all time steps and layers (cannot be stepped).

    Parameters
    ----------
    num_hidden : int
        Number of units of each layer's state.
    num_layers : int, default 1
    mode : str, default 'lstm'
        ``'rnn_relu'``, ``'rnn_tanh'``, ``'lstm'`` or ``'gru'``.
    bidirectional : bool, default False
        Run each layer both ways; the output size doubles.
    dropout : float, default 0.
        Dropout between layers, in training.
    get_next_state : bool, default False
        Return the final states (``state_outputs`` of the operator).
    forget_bias : float, default 1.0
        Initial forget-gate bias of an LSTM (through ``init.FusedRNN``).
    prefix : str, default ``'<mode>_'``
    params : RNNParams, optional
    """

    def __init__(self, num_hidden, num_layers=1, mode="lstm", bidirectional=False, dropout=0.,
                 get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if prefix is None:
            prefix = "%s_" % mode
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=initializer)

    @property
    def state_info(self):
        b = self._bidirectional + 1
        n = (self._mode == "lstm") + 1
        return [{"shape": (b * self._num_layers, 0, self._num_hidden), "__layout__": "LNC"} for _ in range(n)]

    @property
    def _gate_names(self):
        return _GATES[self._mode]

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def _slice_weights(self, arr, li, lh):
        """``{name: view}`` of the flat ``arr`` for input size ``li`` and hidden size ``lh``."""
        args, p, b = {}, 0, len(self._directions)
        for layer in range(self._num_layers):
            for direction in self._directions:
                for gate in self._gate_names:       # W_x of each gate: (lh, li), later layers (lh, b*lh)
                    name = "%s%s%d_i2h%s_weight" % (self._prefix, direction, layer, gate)
                    cols = li if layer == 0 else b * lh
                    args[name] = arr[p:p + lh * cols].reshape((lh, cols))
                    p += lh * cols
                for gate in self._gate_names:
                    name = "%s%s%d_h2h%s_weight" % (self._prefix, direction, layer, gate)
                    args[name] = arr[p:p + lh * lh].reshape((lh, lh))
                    p += lh * lh
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in self._gate_names:
                        name = "%s%s%d_%s%s_bias" % (self._prefix, direction, layer, group, gate)
                        args[name] = arr[p:p + lh]
                        p += lh
        assert p == arr.size, "Invalid parameters size for FusedRNNCell"
        return args

    def unpack_weights(self, args):
        args = args.copy()
        arr = args.pop(self._parameter.name)
        b, m, h = len(self._directions), self._num_gates, self._num_hidden
        # size = b*m*h*(I + h + 2) + (L-1)*b*m*h*(b*h + h + 2); solve for the input size I
        num_input = arr.size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        args.update({name: v.copy() for name, v in self._slice_weights(arr, num_input, h).items()})
        return args

    def pack_weights(self, args):
        args = args.copy()
        b, m, h = self._bidirectional + 1, self._num_gates, self._num_hidden
        w0 = args["%sl0_i2h%s_weight" % (self._prefix, self._gate_names[0])]
        num_input = w0.shape[1]
        total = (num_input + h + 2) * h * m * b + (self._num_layers - 1) * m * h * (h + b * h + 2) * b
        arr = ndarray.zeros((total,), ctx=w0.context, dtype=w0.dtype)
        for name, view in self._slice_weights(arr, num_input, h).items():
            view[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:     # the RNN operator is time-major: NTC goes in and out through swapaxes
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for faster speed",
                          stacklevel=2)
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        else:
            assert axis == 0, "Unsupported layout %s" % layout
        if begin_state is None:
            begin_state = self.begin_state()
        states = {"state": begin_state[0]}
        if self._mode == "lstm":
            states["state_cell"] = begin_state[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state, mode=self._mode, name=self._prefix + "rnn",
                         **states)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            n_states = 2 if self._mode == "lstm" else 1
            for k in range(1, n_states + 1):
                rnn[k]._set_attr(__layout__="LNC")
            outputs, states = rnn[0], [rnn[k] for k in range(1, n_states + 1)]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a ``SequentialRNNCell`` of step cells (one per layer, or a
        ``BidirectionalCell`` per layer; a ``DropoutCell`` between layers when ``dropout > 0``),
        named so that ``unpack_weights``'s arrays are its weights. It can be stepped."""
        kinds = {"rnn_relu": lambda prefix: RNNCell(self._num_hidden, activation="relu", prefix=prefix),
                 "rnn_tanh": lambda prefix: RNNCell(self._num_hidden, activation="tanh", prefix=prefix),
                 "lstm": lambda prefix: LSTMCell(self._num_hidden, prefix=prefix),
                 "gru": lambda prefix: GRUCell(self._num_hidden, prefix=prefix)}
        get_cell = kinds[self._mode]
        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(get_cell("%sl%d_" % (self._prefix, i)),
                                            get_cell("%sr%d_" % (self._prefix, i)),
                                            output_prefix="%sbi_l%d_" % (self._prefix, i)))
            else:
                stack.add(get_cell("%sl%d_" % (self._prefix, i)))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix="%s_dropout%d_" % (self._prefix, i)))
        return stack
