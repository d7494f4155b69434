"""VGG (Simonyan & Zisserman 2014): stacks of 3x3 convolutions between max-pools, optionally BatchNorm."""
from __future__ import annotations

from ....context import cpu
from ....initializer import Xavier
from ... import nn
from ...block import HybridBlock
from ..model_store import constructor, load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn",
           "get_vgg"]


class VGG(HybridBlock):
    """``layers[i]`` convolutions of ``filters[i]`` channels per stage, then two Dense(4096) layers.

    The initializers are part of the model, as in MXNet: Xavier (gaussian, fan-out, magnitude 2) for
    the convolutions and a normal distribution for the Dense layers, so ``net.initialize()`` trains.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(filters), "VGG needs one filter count per stage"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            conv_init = Xavier(rnd_type="gaussian", factor_type="out", magnitude=2)
            for num, width in zip(layers, filters):
                for _ in range(num):
                    self.features.add(nn.Conv2D(width, kernel_size=3, padding=1, weight_initializer=conv_init,
                                                bias_initializer="zeros"))
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(strides=2))
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"), nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """VGG with ``num_layers`` in (11, 13, 16, 19); ``batch_norm=True`` for the ``_bn`` variants."""
    if num_layers not in vgg_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(vgg_spec)}")
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    suffix = "_bn" if kwargs.get("batch_norm") else ""
    return load_pretrained(net, f"vgg{num_layers}{suffix}", pretrained, ctx, root)


vgg11 = constructor("vgg11", get_vgg, 11)
vgg13 = constructor("vgg13", get_vgg, 13)
vgg16 = constructor("vgg16", get_vgg, 16)
vgg19 = constructor("vgg19", get_vgg, 19)
vgg11_bn = constructor("vgg11_bn", get_vgg, 11, batch_norm=True)
vgg13_bn = constructor("vgg13_bn", get_vgg, 13, batch_norm=True)
vgg16_bn = constructor("vgg16_bn", get_vgg, 16, batch_norm=True)
vgg19_bn = constructor("vgg19_bn", get_vgg, 19, batch_norm=True)
