"""Recurrent cells (one time step each): ``RNNCell``, ``LSTMCell``, ``GRUCell``, ``SequentialRNNCell``,
and ``unroll`` to run a cell over a sequence."""
from __future__ import annotations

from ... import ndarray as nd
from ... import symbol as _symbol
from ...ndarray.ndarray import NDArray
from ..block import Block, HybridBlock

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell"]


def _format_sequence(length, inputs, layout: str, merge, in_layout: str = None):
    """``(inputs, time axis, F, batch size)``: the inputs as a list of steps (``merge=False``), one
    array stacked along ``layout``'s time axis (``merge=True``), or as given (``merge=None``)."""
    axis, batch_axis = layout.find("T"), layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    batch_size = 0
    if isinstance(inputs, _symbol.Symbol):
        F = _symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll: a grouped symbol is not one input; pass list(inputs)")
            inputs = list(_symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = nd
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[in_axis]:
                raise ValueError(f"unroll: length {length} but the inputs have {inputs.shape[in_axis]} steps")
            steps = nd.split(inputs, axis=in_axis, num_outputs=inputs.shape[in_axis], squeeze_axis=1)
            inputs = [steps] if isinstance(steps, NDArray) else list(steps)
    else:
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: length {length} but {len(inputs)} inputs")
        F = _symbol if isinstance(inputs[0], _symbol.Symbol) else nd
        if F is nd:
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, (NDArray, _symbol.Symbol)) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    """``begin_state`` or the cell's zero states, on the inputs' context (NDArrays only)."""
    if begin_state is not None:
        return begin_state
    if F is not nd:
        return cell.begin_state(func=_symbol.zeros, batch_size=batch_size)
    first = inputs if isinstance(inputs, NDArray) else inputs[0]
    return cell.begin_state(batch_size, func=nd.zeros, ctx=first.context, dtype=first.dtype)


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Steps at or past ``valid_length[b]`` set to 0 (``SequenceMask``); a list again unless ``merge``."""
    if not isinstance(data, (NDArray, _symbol.Symbol)):
        data = F.stack(*data, axis=time_axis)
    out = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis)
    if not merge:
        steps = F.split(out, num_outputs=length, axis=time_axis, squeeze_axis=True)
        out = [steps] if isinstance(steps, NDArray) else list(steps)
    return out


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """A list of steps reversed in time; with ``valid_length`` each sequence reverses only its valid
    prefix (``SequenceReverse``), the padding stays in place."""
    F = _symbol if isinstance(sequences[0], _symbol.Symbol) else nd
    if valid_length is None:
        return list(reversed(sequences))
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                            use_sequence_length=True)
    if unroll_step > 1 or F is _symbol:
        return list(F.split(rev, axis=0, num_outputs=unroll_step, squeeze_axis=True))
    return [rev[0]]


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
        if self._modified:
            raise AssertionError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot "
                                 "be called directly. Call the modifier cell instead.")
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
        stacks the outputs into one array (``None``: leave them a list). ``valid_length (N,)``:
        the returned states are each sequence's state at its last valid step (``SequenceLast``) and
        outputs past it are 0 (``SequenceMask``).
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*step_states, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for step_states in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
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
    """Stacked cells: the output of each is the input of the next; states are concatenated.
    ``unroll`` unrolls each cell over the whole sequence in turn (so a ``BidirectionalCell`` or a
    ``DropoutCell`` inside works on whole sequences); stepping one with a ``BidirectionalCell``
    inside raises, as that cell can only be unrolled."""

    def add(self, cell: RecurrentCell) -> None:
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, batch_size: int = 0, func=None, **kwargs):
        if self._modified:
            raise AssertionError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot "
                                 "be called directly. Call the modifier cell instead.")
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

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        cells = list(self._children.values())
        p, next_states = 0, []
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n],
                                         layout=layout, valid_length=valid_length,
                                         merge_outputs=None if i < len(cells) - 1 else merge_outputs)
            p += n
            next_states.extend(states)
        return inputs, next_states

    def __len__(self) -> int:
        return len(self._children)

    def __getitem__(self, i):
        return list(self._children.values())[i]


class HybridSequentialRNNCell(SequentialRNNCell, HybridBlock):
    """``SequentialRNNCell`` of hybrid cells."""

    def hybrid_forward(self, F, *args, **kwargs):
        raise NotImplementedError
