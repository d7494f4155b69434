"""Convolution and pooling layers: ``Conv1D/2D/3D``, ``Conv1D/2D/3DTranspose``, max/average/global
pooling, ``ReflectionPad2D``."""
from __future__ import annotations

from numbers import Number

from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D",
           "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D",
           "ReflectionPad2D"]


def _tuple(value, n: int) -> tuple:
    return (value,) * n if isinstance(value, Number) else tuple(value)


class _Conv(HybridBlock):
    """Shared by every convolution: the weight is ``(channels, in_channels/groups, *kernel)`` for
    ``Convolution`` and ``(in_channels, channels/groups, *kernel)`` for ``Deconvolution``."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout, in_channels=0,
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 op_name="Convolution", adj=None, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        n = len(kernel_size)
        with self.name_scope():
            self._channels, self._in_channels = channels, in_channels
            self._op_name = op_name
            self._kwargs = {"kernel": tuple(kernel_size), "stride": _tuple(strides, n),
                            "dilate": _tuple(dilation, n), "pad": _tuple(padding, n), "num_filter": channels,
                            "num_group": groups, "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = _tuple(adj, n)
            if op_name == "Convolution":
                wshape = (channels, in_channels // groups if in_channels else 0) + tuple(kernel_size)
            else:
                wshape = (in_channels, channels // groups) + tuple(kernel_size)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            self.bias = (self.params.get("bias", shape=(channels,), init=bias_initializer,
                                         allow_deferred_init=True) if use_bias else None)
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def _alias(self) -> str:
        return "conv"

    def hybrid_forward(self, F, x, weight, bias=None):
        # Inputs by keyword: Deconvolution's argument list depends on no_bias (default True).
        inputs = {"data": x, "weight": weight}
        if bias is not None:
            inputs["bias"] = bias
        out = getattr(F, self._op_name)(name="fwd", **inputs, **self._kwargs)
        return self.act(out) if self.act is not None else out

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self._in_channels or None} -> {self._channels}, "
                f"kernel_size={self._kwargs['kernel']}, stride={self._kwargs['stride']})")


class Conv1D(_Conv):
    """1-D convolution over ``(N, C, W)``."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 1), strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over ``(N, C, H, W)``."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 layout="NCHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 2), strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over ``(N, C, D, H, W)``."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
                 groups=1, layout="NCDHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 3), strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class _ConvTranspose(_Conv):
    """Transposed convolution (``Deconvolution``) over ``n`` spatial axes; ``output_padding`` is
    MXNet's ``adj``. Output size per axis: ``(in - 1) * stride - 2 * pad + kernel + output_padding``."""

    _ndim, _layouts = 2, ("NCHW",)

    def __init__(self, channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
                 activation, use_bias, weight_initializer, bias_initializer, in_channels, **kwargs):
        n = self._ndim
        # AssertionError, as MXNet's asserts raise it.
        name = type(self).__name__
        if layout not in self._layouts:
            raise AssertionError(f"{name}: only layouts {self._layouts} are supported, got {layout!r}")
        kernel_size, output_padding = _tuple(kernel_size, n), _tuple(output_padding, n)
        if len(kernel_size) != n or len(output_padding) != n:
            raise AssertionError(f"{name}: kernel_size and output_padding need {n} values")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
                         activation, use_bias, weight_initializer, bias_initializer,
                         op_name=kwargs.pop("op_name", "Deconvolution"), adj=output_padding, **kwargs)
        self.outpad = output_padding


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution over ``(N, C, W)``."""

    _ndim, _layouts = 1, ("NCW",)

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
                         activation, use_bias, weight_initializer, bias_initializer, in_channels, **kwargs)


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution over ``(N, C, H, W)``."""

    _ndim, _layouts = 2, ("NCHW", "NHWC")

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), output_padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
                         activation, use_bias, weight_initializer, bias_initializer, in_channels, **kwargs)


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution over ``(N, C, D, H, W)``."""

    _ndim, _layouts = 3, ("NCDHW", "NDHWC")

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), output_padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
                         activation, use_bias, weight_initializer, bias_initializer, in_channels, **kwargs)


class _Pooling(HybridBlock):
    """Shared by the pooling layers: ``F.Pooling`` with MXNet's argument names."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        n = len(pool_size)
        self._kwargs = {"kernel": tuple(pool_size),
                        "stride": _tuple(pool_size if strides is None else strides, n),
                        "pad": _tuple(padding, n), "global_pool": global_pool, "pool_type": pool_type,
                        "layout": layout, "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']}, padding={k['pad']})"


def _pool_class(name: str, n: int, pool_type: str, default_layout: str, doc: str):
    avg = pool_type == "avg"

    def __init__(self, pool_size=(2,) * n if n > 1 else 2, strides=None, padding=0, layout=default_layout,
                 ceil_mode=False, count_include_pad=True, **kwargs):
        _Pooling.__init__(self, _tuple(pool_size, n), strides, padding, ceil_mode, False, pool_type, layout,
                          count_include_pad if avg else None, **kwargs)

    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _global_pool_class(name: str, n: int, pool_type: str, default_layout: str):
    def __init__(self, layout=default_layout, **kwargs):
        _Pooling.__init__(self, (1,) * n, None, 0, True, True, pool_type, layout, **kwargs)

    return type(name, (_Pooling,), {"__init__": __init__, "__module__": __name__,
                                    "__doc__": f"Global {pool_type} pooling: one value per channel."})


MaxPool1D = _pool_class("MaxPool1D", 1, "max", "NCW", "Max pooling over ``(N, C, W)``.")
MaxPool2D = _pool_class("MaxPool2D", 2, "max", "NCHW", "Max pooling over ``(N, C, H, W)``.")
MaxPool3D = _pool_class("MaxPool3D", 3, "max", "NCDHW", "Max pooling over ``(N, C, D, H, W)``.")
AvgPool1D = _pool_class("AvgPool1D", 1, "avg", "NCW", "Average pooling over ``(N, C, W)``.")
AvgPool2D = _pool_class("AvgPool2D", 2, "avg", "NCHW",
                        "Average pooling over ``(N, C, H, W)``; padding counts in the divisor by default.")
AvgPool3D = _pool_class("AvgPool3D", 3, "avg", "NCDHW", "Average pooling over ``(N, C, D, H, W)``.")
GlobalMaxPool1D = _global_pool_class("GlobalMaxPool1D", 1, "max", "NCW")
GlobalMaxPool2D = _global_pool_class("GlobalMaxPool2D", 2, "max", "NCHW")
GlobalAvgPool1D = _global_pool_class("GlobalAvgPool1D", 1, "avg", "NCW")
GlobalAvgPool2D = _global_pool_class("GlobalAvgPool2D", 2, "avg", "NCHW")
GlobalMaxPool3D = _global_pool_class("GlobalMaxPool3D", 3, "max", "NCDHW")
GlobalAvgPool3D = _global_pool_class("GlobalAvgPool3D", 3, "avg", "NCDHW")


class ReflectionPad2D(HybridBlock):
    """Pads the last two axes of ``(N, C, H, W)`` by reflection (the edge is not repeated)::

        out (N, C, H + 2p, W + 2p);  out[..., p - k, :] = x[..., k, :] for k = 1..p (likewise below and in W)

    ``padding``: an int ``p``, or MXNet's 8-tuple ``pad_width`` for ``F.pad`` (the first four 0).
    """

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, Number):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise AssertionError(f"ReflectionPad2D: padding must be an int or 8 values, got {padding!r}")
        self._padding = tuple(padding)

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
