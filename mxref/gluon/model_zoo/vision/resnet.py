"""ResNet v1 (He et al. 2015) and v2 (pre-activation, He et al. 2016), 18 to 152 layers.

v1 adds the shortcut after the last BatchNorm and applies ReLU to the sum; v2 puts BatchNorm and
ReLU *before* each convolution, so the shortcut carries the raw sum (``x + F(x)``) from block to
block. Blocks are registered in MXNet's order, so parameter names (``features.5.0.body.0.weight``,
``resnetv10_stage1_conv0_weight``) and pretrained files match MXNet's.
"""
from __future__ import annotations

from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ..model_store import constructor, load_pretrained

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
           "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
           "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2", "get_resnet"]


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _shortcut_v1(channels, stride, in_channels):
    """The projection shortcut of v1: a strided 1x1 convolution and BatchNorm."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels))
    out.add(nn.BatchNorm())
    return out


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm: ``relu(x + bn(conv(relu(bn(conv(x))))))`` (ResNet-18/34)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(*self._layers(channels, stride, in_channels))
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    @staticmethod
    def _layers(channels, stride, in_channels):
        return [_conv3x3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation("relu"),
                _conv3x3(channels, 1, channels), nn.BatchNorm()]

    def hybrid_forward(self, F, x):
        residual = self.downsample(x) if self.downsample else x
        return F.Activation(self.body(x) + residual, act_type="relu")


class BottleneckV1(BasicBlockV1):
    """1x1 (reduce to channels/4), 3x3, 1x1 (expand) with BatchNorm; ReLU after the sum (ResNet-50+)."""

    @staticmethod
    def _layers(channels, stride, in_channels):
        return [nn.Conv2D(channels // 4, kernel_size=1, strides=stride), nn.BatchNorm(),
                nn.Activation("relu"), _conv3x3(channels // 4, 1, channels // 4), nn.BatchNorm(),
                nn.Activation("relu"),
                nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm()]


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: ``x + conv(relu(bn(conv(relu(bn(x))))))``."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            # NOTE: v2 projects the *pre-activated* input, not the raw one.
            residual = self.downsample(x)
        x = F.Activation(self.bn2(self.conv1(x)), act_type="relu")
        return self.conv2(x) + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: BN-ReLU before each of the 1x1, 3x3 and 1x1 convolutions."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            residual = self.downsample(x)
        x = F.Activation(self.bn2(self.conv1(x)), act_type="relu")
        x = F.Activation(self.bn3(self.conv2(x)), act_type="relu")
        return self.conv3(x) + residual


def _stem(features, channels, thumbnail):
    """7x7/2 convolution and 3x3/2 max-pool for ImageNet; one 3x3 convolution for 32x32 inputs."""
    if thumbnail:
        features.add(_conv3x3(channels, 1, 0))
    else:
        features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                     nn.MaxPool2D(3, 2, 1))


def _stage(block, num_blocks, channels, stride, index, in_channels):
    """One stage: the first block changes stride/width (with a projection shortcut), the rest keep it."""
    stage = nn.HybridSequential(prefix=f"stage{index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet v1: stem, four stages, global average pooling, a Dense classifier (``output``)."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1, "ResNet needs one more channel count than stages"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            _stem(self.features, channels[0], thumbnail)
            for i, num in enumerate(layers):
                self.features.add(_stage(block, num, channels[i + 1], 1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet v2: a parameter-free input BatchNorm, the stages, then BN-ReLU before pooling."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1, "ResNet needs one more channel count than stages"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            _stem(self.features, channels[0], thumbnail)
            in_channels = channels[0]
            for i, num in enumerate(layers):
                self.features.add(_stage(block, num, channels[i + 1], 1 if i == 0 else 2, i + 1, in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """ResNet ``version`` (1 or 2) with ``num_layers`` (18, 34, 50, 101, 152)."""
    if num_layers not in resnet_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(resnet_spec)}")
    if version not in (1, 2):
        raise ValueError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    block_type, layers, channels = resnet_spec[num_layers]
    net = resnet_net_versions[version - 1](resnet_block_versions[version - 1][block_type], layers, channels,
                                           **kwargs)
    return load_pretrained(net, f"resnet{num_layers}_v{version}", pretrained, ctx, root)


resnet18_v1 = constructor("resnet18_v1", get_resnet, 1, 18)
resnet34_v1 = constructor("resnet34_v1", get_resnet, 1, 34)
resnet50_v1 = constructor("resnet50_v1", get_resnet, 1, 50)
resnet101_v1 = constructor("resnet101_v1", get_resnet, 1, 101)
resnet152_v1 = constructor("resnet152_v1", get_resnet, 1, 152)
resnet18_v2 = constructor("resnet18_v2", get_resnet, 2, 18)
resnet34_v2 = constructor("resnet34_v2", get_resnet, 2, 34)
resnet50_v2 = constructor("resnet50_v2", get_resnet, 2, 50)
resnet101_v2 = constructor("resnet101_v2", get_resnet, 2, 101)
resnet152_v2 = constructor("resnet152_v2", get_resnet, 2, 152)
