"""Convolutional step cells (Shi et al. 2015): ``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``.

The same recurrences as ``RNNCell``/``LSTMCell``/``GRUCell`` with ``FullyConnected`` replaced by
``Convolution``: ``i2h`` convolves the input (its kernel, stride, pad, dilation), ``h2h`` convolves
the state with stride 1 and "same" padding, so the state keeps the shape ``i2h`` produces.
"""
from __future__ import annotations

import functools

from .. import symbol
from .base_cell import BaseRNNCell

_LEAKY = functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """Abstract base of the convolutional cells: the two convolutions and the state shape.

    The state shape is inferred once from ``input_shape`` through the ``i2h`` convolution; its
    batch dimension is then 0 (unknown), as for the other cells. ``h2h_kernel`` must be odd so the
    "same" padding ``dilate * (kernel - 1) / 2`` exists.
    """

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                 i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, activation, prefix="", params=None,
                 conv_layout="NCHW"):
        super().__init__(prefix=prefix, params=params)
        self._h2h_kernel = h2h_kernel
        assert (self._h2h_kernel[0] % 2 == 1) and (self._h2h_kernel[1] % 2 == 1), \
            "Only support odd number, get h2h_kernel= %s" % str(h2h_kernel)
        self._h2h_pad = (h2h_dilate[0] * (h2h_kernel[0] - 1) // 2, h2h_dilate[1] * (h2h_kernel[1] - 1) // 2)
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable("data"), num_filter=num_hidden, kernel=i2h_kernel,
                                   stride=i2h_stride, pad=i2h_pad, dilate=i2h_dilate, layout=conv_layout)
        self._state_shape = (0,) + tuple(probe.infer_shape(data=input_shape)[1][0][1:])
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout},
                {"shape": self._state_shape, "__layout__": self._conv_layout}]

    def _conv_forward(self, inputs, states, name):
        i2h = symbol.Convolution(name="%si2h" % name, data=inputs,
                                 num_filter=self._num_hidden * self._num_gates, kernel=self._i2h_kernel,
                                 stride=self._i2h_stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                                 weight=self._iW, bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name="%sh2h" % name, data=states[0],
                                 num_filter=self._num_hidden * self._num_gates, kernel=self._h2h_kernel,
                                 dilate=self._h2h_dilate, pad=self._h2h_pad, stride=(1, 1),
                                 weight=self._hW, bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def __call__(self, inputs, states):
        raise NotImplementedError("BaseConvRNNCell is abstract class for convolutional RNN")


def _conv_doc(prefix):
    """The shared Parameters section of the convolutional cells' docstrings."""
    return """
    Parameters
    ----------
    input_shape : tuple of int
        Shape of the input of one time step (batch included), e.g. ``(N, C, H, W)``.
    num_hidden : int
        Number of channels of the state.
    h2h_kernel, h2h_dilate : tuple of int, default (3, 3), (1, 1)
        Kernel (odd) and dilation of the state-to-state convolution.
    i2h_kernel, i2h_stride, i2h_pad, i2h_dilate : tuple of int, default (3, 3), (1, 1), (1, 1), (1, 1)
        The input-to-state convolution.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    activation : str or callable, default ``LeakyReLU(act_type='leaky', slope=0.2)``
    prefix : str, default ``'%s'``
    params : RNNParams, optional
    conv_layout : str, default 'NCHW'
    """ % prefix


class _DefaultConvCell(BaseConvRNNCell):
    """MXNet's public constructor of the three convolutional cells: every argument has its default,
    and ``prefix`` defaults to the cell's own (``_PREFIX``)."""

    _PREFIX = ""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1), i2h_kernel=(3, 3),
                 i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1), i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 activation=_LEAKY, prefix=None, params=None, conv_layout="NCHW"):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride, i2h_pad,
                         i2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, activation, prefix=self._PREFIX if prefix is None else prefix,
                         params=params, conv_layout=conv_layout)


class ConvRNNCell(_DefaultConvCell):
    __doc__ = ("Convolutional RNN cell: ``h_t = act(conv_i(x_t) + conv_h(h_{t-1}))``.\n"
               + _conv_doc("ConvRNN_"))

    _PREFIX = 'ConvRNN_'

    @property
    def _gate_names(self):
        return ("",)

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name="%sout" % name)
        return output, [output]


class ConvLSTMCell(_DefaultConvCell):
    __doc__ = ("Convolutional LSTM cell (Shi et al. 2015); ``activation`` replaces tanh on ``c~`` "
               "and on ``c_t``.\n" + _conv_doc("ConvLSTM_"))

    _PREFIX = 'ConvLSTM_'

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=self._conv_layout.find("C"),
                                    name="%sslice" % name)
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name="%si" % name)
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name="%sf" % name)
        in_transform = self._get_activation(gates[2], self._activation, name="%sc" % name)
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name="%so" % name)
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                                        name="%sstate" % name)
        next_h = symbol._internal._mul(out_gate, self._get_activation(next_c, self._activation),
                                       name="%sout" % name)
        return next_h, [next_h, next_c]


class ConvGRUCell(_DefaultConvCell):
    __doc__ = ("Convolutional GRU cell; ``activation`` replaces tanh on the candidate.\n"
               + _conv_doc("ConvGRU_"))

    _PREFIX = 'ConvGRU_'

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name="%s_i2h_slice" % name)
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name="%s_h2h_slice" % name)
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name="%s_r_act" % name)
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name="%s_z_act" % name)
        next_h_tmp = self._get_activation(i2h + reset_gate * h2h, self._activation, name="%s_h_act" % name)
        next_h = symbol._internal._plus((1. - update_gate) * next_h_tmp, update_gate * states[0],
                                        name="%sout" % name)
        return next_h, [next_h]
