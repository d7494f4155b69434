"""``VariationalDropoutCell`` (one dropout mask per sequence) and ``LSTMPCell`` (LSTM with a projected
recurrent state), as in MXNet 1.x's ``gluon.contrib.rnn``."""
from __future__ import annotations

from ...parameter import tensor_types
from ...rnn.cell_wrappers import BidirectionalCell, ModifierCell
from ...rnn.rnn_cell import (
    HybridRecurrentCell,
    SequentialRNNCell,
    _format_sequence,
    _get_begin_state,
    _mask_sequence_variable_length,
)

__all__ = ["VariationalDropoutCell", "LSTMPCell"]


class VariationalDropoutCell(ModifierCell):
    """Dropout on a cell's inputs, first state (``h``) and outputs with the same mask at every
    time step (Gal & Ghahramani, arXiv:1512.05287); the three masks are independent.

    The masks are drawn at the first step and kept until ``reset()`` (``unroll`` resets), so a
    cell stepped by hand must be reset between sequences. Without state dropout, ``unroll``
    drops the whole sequence at once: ``Dropout(x, axes=(time,))`` is one mask shared over time.
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support variational state dropout. Please add "
                                 "VariationalDropoutCell to the cells underneath instead.")
        if drop_states and isinstance(base_cell, SequentialRNNCell) and \
                getattr(base_cell, "_bidirectional", False):
            raise AssertionError("Bidirectional SequentialRNNCell doesn't support variational state "
                                 "dropout. Please add VariationalDropoutCell to the cells underneath "
                                 "instead.")
        super().__init__(base_cell)
        self.drop_inputs, self.drop_states, self.drop_outputs = drop_inputs, drop_states, drop_outputs
        self.drop_inputs_mask = self.drop_states_mask = self.drop_outputs_mask = None

    def _alias(self) -> str:
        return "vardrop"

    def reset(self) -> None:
        super().reset()
        self.drop_inputs_mask = self.drop_states_mask = self.drop_outputs_mask = None

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
        if self.drop_states:       # only h, always the first state
            states = [states[0] * self.drop_states_mask] + list(states[1:])
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        output, states = self.base_cell(inputs, states)
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)
        if self.drop_outputs:
            output = output * self.drop_outputs_mask
        return output, states

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """As ``RecurrentCell.unroll``; inputs and outputs are dropped over the whole sequence at
        once when there is no state dropout."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM step whose recurrent state is projected (Sak et al., arXiv:1402.1128)::

        i, f, c~, o = split(W_x x_t + b_x + W_h r_{t-1} + b_h)      (sigmoid, sigmoid, tanh, sigmoid)
        c_t = f * c_{t-1} + i * c~;   h_t = o * tanh(c_t);   r_t = W_r h_t

    Returns ``r_t`` as output and states ``[r_t, c_t]``; ``h2h_weight`` is
    ``(4 hidden, projection)`` and ``h2r_weight`` ``(projection, hidden)``.
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = hidden_size, input_size
        self._projection_size = projection_size
        nh, npj = hidden_size, projection_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(4 * nh, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(4 * nh, npj),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(npj, nh),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(4 * nh,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(4 * nh,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self) -> str:
        return "lstmp"

    def __repr__(self) -> str:
        shape, proj = self.i2h_weight.shape, self.h2r_weight.shape
        return f"{type(self).__name__}({shape[1] or None} -> {shape[0]} -> {proj[0]})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias):
        prefix, nh = f"t{self._counter}_", self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=nh * 4,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=nh * 4,
                               name=prefix + "h2h")
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        in_transform = F.Activation(gates[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform, name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"), name=prefix + "hidden")
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size, weight=h2r_weight,
                                  no_bias=True, name=prefix + "out")
        return next_r, [next_r, next_c]
