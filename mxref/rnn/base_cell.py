"""The legacy symbolic cell protocol: ``RNNParams``, ``BaseRNNCell`` and sequence normalization.

A cell is a step function on Symbols, ``output, states = cell(input, states)``; ``unroll`` calls it
once per time step, so the unrolled graph holds one copy of the step's nodes per step, all sharing
the cell's weight Variables. Node names follow MXNet 1.x exactly (``<prefix>t<step>_<part>``), so a
checkpoint or a graph written by MXNet's ``mx.rnn`` matches one written here.
"""
from __future__ import annotations

from .. import ndarray, symbol
from ..base import string_types


def _cells_state_info(cells):
    return sum([c.state_info for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _cells_unpack_weights(cells, args):
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells, args):
    for cell in cells:
        args = cell.pack_weights(args)
    return args


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """Turn ``inputs`` into a list of per-step symbols (``merge=False``), one merged symbol
    (``merge=True``), or leave it as it is (``merge=None``); returns it and the time axis of ``layout``.

    A single symbol is split along its time axis with ``split(..., squeeze_axis=1)``; a list is
    merged with ``expand_dims`` + ``Concat``. A merged result in ``in_layout`` is swapped to ``layout``.
    """
    assert inputs is not None, \
        "unroll(inputs=None) has been deprecated. Please create input variables outside unroll."
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            assert len(inputs.list_outputs()) == 1, \
                "unroll doesn't allow grouped symbol as input. Please convert " \
                "to list with list(inputs) first or let unroll handle splitting."
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        assert length is None or len(inputs) == length
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs], dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim0=axis, dim1=in_axis)
    return inputs, axis


class RNNParams:
    """Container for the weight Variables of cells; pass one to several cells to share weights.

    Parameters
    ----------
    prefix : str
        Prepended to every variable name this container creates.
    """

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The Variable ``prefix + name``, created (with ``symbol.Variable(**kwargs)``) on first use."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Abstract base class of the symbolic RNN cells.

    Parameters
    ----------
    prefix : str, optional
        Prefix of the cell's node names (and of its weights' names when ``params`` is None).
    params : RNNParams, optional
        Container for weight sharing between cells; a new one (with ``prefix``) if None.
    """

    def __init__(self, prefix="", params=None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before re-using the cell for another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One time step: ``(output, new_states)`` from a 2-D input symbol and the previous states."""
        raise NotImplementedError()

    @property
    def params(self):
        """The cell's ``RNNParams`` (asking for it marks them as no longer the cell's own)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """Shape (``0`` = batch, inferred) and ``__layout__`` of each state."""
        raise NotImplementedError()

    @property
    def state_shape(self):
        """The shape of each state."""
        return [ele["shape"] for ele in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs):
        """Initial states, ``func(name='<prefix>begin_state_<k>', shape=..., __layout__=..., **kwargs)``
        each: ``symbol.zeros`` by default, ``symbol.Variable`` to feed the states as inputs."""
        assert not self._modified, \
            "After applying modifier cells (e.g. DropoutCell) the base " \
            "cell cannot be called directly. Call the modifier cell instead."
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name="%sbegin_state_%d" % (self._prefix, self._init_counter), **kwargs))
        return states

    def unpack_weights(self, args):
        """Split each fused gate matrix ``<prefix>{i2h,h2h}_{weight,bias}`` into one array per gate,
        ``<prefix>{i2h,h2h}<gate>_{weight,bias}`` (gates as in ``_gate_names``, rows in that order).

        Parameters
        ----------
        args : dict of str to NDArray
            Usually ``Module.get_params()[0]``; returned as a new dict.
        """
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop("%s%s_weight" % (self._prefix, group))
            bias = args.pop("%s%s_bias" % (self._prefix, group))
            for j, gate in enumerate(self._gate_names):
                args["%s%s%s_weight" % (self._prefix, group, gate)] = weight[j * h:(j + 1) * h].copy()
                args["%s%s%s_bias" % (self._prefix, group, gate)] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """The inverse of ``unpack_weights``: concatenate the per-gate arrays back into one."""
        args = args.copy()
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [args.pop("%s%s%s_%s" % (self._prefix, group, gate, kind))
                         for gate in self._gate_names]
                args["%s%s_%s" % (self._prefix, group, kind)] = ndarray.concat(*parts, dim=0)
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll the cell over ``length`` time steps.

        Parameters
        ----------
        length : int
            Number of steps.
        inputs : Symbol or list of Symbol
            One symbol ``(batch, length, ...)`` for ``layout='NTC'`` (``(length, batch, ...)`` for
            ``'TNC'``), split into steps; or a list of ``length`` symbols ``(batch, ...)``.
        begin_state : list of Symbol, optional
            The initial states; ``begin_state()`` if None.
        layout : str
            ``'NTC'`` or ``'TNC'``.
        merge_outputs : bool, optional
            True: one symbol stacked on the time axis; False: a list per step; None: whichever is
            natural for the cell (a list here).

        Returns
        -------
        outputs : Symbol or list of Symbol
        states : list of Symbol
            The states after the last step, in ``begin_state``'s structure.
        """
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        states = begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        """``Activation(act_type=activation)`` for a string, else ``activation(inputs, **kwargs)``."""
        if isinstance(activation, string_types):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)
