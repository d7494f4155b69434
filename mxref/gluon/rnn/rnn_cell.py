"""Recurrent cells (one time step each): ``RNNCell``, ``LSTMCell``, ``GRUCell``, ``SequentialRNNCell``,
and ``unroll`` to run a cell over a sequence."""
from __future__ import annotations

from ... import ndarray as nd
from ... import symbol as _symbol
from ...ndarray.ndarray import NDArray
from ..block import Block, HybridBlock

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell"]


def _format_sequence(length, inputs, layout: str, merge):
    """The inputs as a list of time steps (``merge=False``) or one array (``merge=True``)."""
    axis = layout.find("T")
    batch_axis = layout.find("N")
    batch_size = 0
    if isinstance(inputs, _symbol.Symbol):
        F = _symbol
        if merge is False:
            inputs = list(_symbol.split(inputs, axis=axis, num_outputs=length, squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = nd
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[axis]:
                raise ValueError(f"unroll: length {length} but the inputs have {inputs.shape[axis]} steps")
            steps = nd.split(inputs, axis=axis, num_outputs=inputs.shape[axis], squeeze_axis=1)
            inputs = [steps] if isinstance(steps, NDArray) else list(steps)
    else:
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: length {length} but {len(inputs)} inputs")
        F = _symbol if isinstance(inputs[0], _symbol.Symbol) else nd
        if F is nd:
            batch_size = inputs[0].shape[batch_axis]
        if merge is True:
            inputs = F.concat(*[F.expand_dims(i, axis=axis) for i in inputs], dim=axis)
    return inputs, axis, F, batch_size


class RecurrentCell(Block):
    """Base class of cells: ``cell(inputs, states) -> (output, new_states)`` for one time step."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart the step counter (``unroll`` does it before running)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size: int = 0):
        raise NotImplementedError

    def begin_state(self, batch_size: int = 0, func=None, **kwargs):
        """Initial states (zeros by default), one per ``state_info`` entry."""
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info)
            info.pop("__layout__", None)
            info.update(kwargs)
            if func is None or func is nd.zeros:
                states.append(nd.zeros(**info))
            else:
                states.append(func(**info))
        return states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC", merge_outputs=None,
               valid_length=None):
        """Run the cell over ``length`` steps; returns ``(outputs, last_states)``.

        ``inputs`` is one array (``layout`` 'NTC' or 'TNC') or a list of steps; ``merge_outputs``
        stacks the outputs into one array (default: the same form as the inputs).
        """
        if valid_length is not None:
            raise ValueError("unroll: valid_length is not supported")
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        if begin_state is None:
            if F is not nd:
                raise ValueError("unroll: pass begin_state when unrolling symbols")
            begin_state = self.begin_state(batch_size, ctx=inputs[0].context, dtype=inputs[0].dtype)
        states = begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        if merge_outputs is None:
            merge_outputs = False
        if merge_outputs:
            outputs, _, _, _ = _format_sequence(length, outputs, layout, True)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        func = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}.get(activation)
        if func is not None:
            return func(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs)

    def forward(self, inputs, states):
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A cell written as ``hybrid_forward(F, inputs, states, **params)``."""

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


def _cell_params(cell, hidden_size, gates, input_size, i2h_w, h2h_w, i2h_b, h2h_b):
    cell.i2h_weight = cell.params.get("i2h_weight", shape=(gates * hidden_size, input_size), init=i2h_w,
                                      allow_deferred_init=True)
    cell.h2h_weight = cell.params.get("h2h_weight", shape=(gates * hidden_size, hidden_size), init=h2h_w,
                                      allow_deferred_init=True)
    cell.i2h_bias = cell.params.get("i2h_bias", shape=(gates * hidden_size,), init=i2h_b,
                                    allow_deferred_init=True)
    cell.h2h_bias = cell.params.get("h2h_bias", shape=(gates * hidden_size,), init=h2h_b,
                                    allow_deferred_init=True)


class RNNCell(HybridRecurrentCell):
    """``h_t = activation(W_x x_t + b_x + W_h h_{t-1} + b_h)`` (activation 'tanh' by default)."""

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._activation, self._input_size = hidden_size, activation, input_size
        _cell_params(self, hidden_size, 1, input_size, i2h_weight_initializer, h2h_weight_initializer,
                     i2h_bias_initializer, h2h_bias_initializer)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self) -> str:
        return "rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=self._hidden_size,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=self._hidden_size,
                               name=prefix + "h2h")
        output = self._get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + "plus0"), self._activation,
                                      name=prefix + "out")
        return output, [output]


class LSTMCell(HybridRecurrentCell):
    """One LSTM step; the gates are sliced from ``i2h + h2h`` in the order input, forget, cell, output."""

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = hidden_size, input_size
        self._activation, self._recurrent_activation = activation, recurrent_activation
        _cell_params(self, hidden_size, 4, input_size, i2h_weight_initializer, h2h_weight_initializer,
                     i2h_bias_initializer, h2h_bias_initializer)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}] * 2

    def _alias(self) -> str:
        return "lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, nh = f"t{self._counter}_", self._hidden_size
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=nh * 4, name=prefix + "i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=nh * 4, name=prefix + "h2h")
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=prefix + "plus0"), num_outputs=4,
                               name=prefix + "slice")
        rec, act = self._recurrent_activation, self._activation
        in_gate = self._get_activation(F, gates[0], rec, name=prefix + "i")
        forget_gate = self._get_activation(F, gates[1], rec, name=prefix + "f")
        in_transform = self._get_activation(F, gates[2], act, name=prefix + "c")
        out_gate = self._get_activation(F, gates[3], rec, name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"),
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act, name=prefix + "activation0"),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(HybridRecurrentCell):
    """One GRU step: ``h_t = (1 - z) * n + z * h_{t-1}`` with ``n = tanh(x_n + r * h_n)``."""

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = hidden_size, input_size
        _cell_params(self, hidden_size, 3, input_size, i2h_weight_initializer, h2h_weight_initializer,
                     i2h_bias_initializer, h2h_bias_initializer)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self) -> str:
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, nh, h = f"t{self._counter}_", self._hidden_size, states[0]
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=nh * 3, name=prefix + "i2h")
        h2h = F.FullyConnected(h, h2h_weight, h2h_bias, num_hidden=nh * 3, name=prefix + "h2h")
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"), act_type="sigmoid",
                                  name=prefix + "r_act")
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"), act_type="sigmoid",
                                   name=prefix + "z_act")
        gated = F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h, name=prefix + "mul0"),
                               name=prefix + "plus2")
        next_h_tmp = F.Activation(gated, act_type="tanh", name=prefix + "h_act")
        ones = F.ones_like(update_gate, name=prefix + "ones_like0")
        next_h = F.elemwise_add(
            F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + "minus0"), next_h_tmp,
                           name=prefix + "mul1"),
            F.elemwise_mul(update_gate, h, name=prefix + "mul20"), name=prefix + "out")
        return next_h, [next_h]


class SequentialRNNCell(RecurrentCell):
    """Stacked cells: the output of each is the input of the next; states are concatenated."""

    def add(self, cell: RecurrentCell) -> None:
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, batch_size: int = 0, func=None, **kwargs):
        return [s for c in self._children.values() for s in c.begin_state(batch_size, func, **kwargs)]

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, p = [], 0
        for cell in self._children.values():
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def __len__(self) -> int:
        return len(self._children)

    def __getitem__(self, i):
        return list(self._children.values())[i]


class HybridSequentialRNNCell(SequentialRNNCell, HybridBlock):
    """``SequentialRNNCell`` of hybrid cells."""

    def hybrid_forward(self, F, *args, **kwargs):
        raise NotImplementedError
