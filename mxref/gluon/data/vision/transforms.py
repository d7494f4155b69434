"""``gluon.data.vision.transforms``: image transforms as Blocks (HybridBlocks over ``F.image.*``).

Images are HWC (or NHWC batches) until ``ToTensor`` makes them CHW float32 in [0, 1]; ``Normalize``
and ``Rotate`` work on CHW / NCHW. ``Compose`` runs its transforms in order and, as MXNet does,
gathers each run of two or more consecutive HybridBlocks into one hybridized ``HybridSequential``.
"""
from __future__ import annotations

import random

import numpy as np

from .... import image
from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Rotate", "RandomRotation", "RandomResizedCrop",
           "CropResize", "CenterCrop", "Resize", "RandomFlipLeftRight", "RandomFlipTopBottom",
           "RandomBrightness", "RandomContrast", "RandomSaturation", "RandomHue", "RandomColorJitter",
           "RandomLighting", "RandomApply"]


class Compose(Sequential):
    """Sequentially composes transforms; consecutive HybridBlocks run as one hybridized block."""

    def __init__(self, transforms):
        super().__init__()
        run = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                run.append(t)
                continue
            if len(run) == 1:
                self.add(run[0])
            elif len(run) > 1:
                fused = HybridSequential()
                fused.add(*run)
                fused.hybridize()
                self.add(fused)
            run = []
            if t is not None:
                self.add(t)


class Cast(HybridBlock):
    """Cast the input to ``dtype`` (default float32)."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """HWC (or NHWC) in [0, 255] -> CHW (or NCHW) float32 in [0, 1] (``image.to_tensor``)."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean[c]) / std[c]`` on CHW / NCHW; ``mean``, ``std``: one number or one per channel."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean, self._std = mean, std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, self._mean, self._std)


class Resize(HybridBlock):
    """Resize to ``size`` (an int: both sides, or the short side with ``keep_ratio``; or ``(w, h)``)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._size, self._keep, self._interpolation = size, keep_ratio, interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class CropResize(HybridBlock):
    """Crop the area at ``(x, y)`` of ``width`` x ``height``, then resize it to ``size`` if given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size, self._interpolation = size, interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, self._x, self._y, self._width, self._height)
        if self._size:
            out = F.image.resize(out, self._size, False, self._interpolation)
        return out


class CenterCrop(Block):
    """Crop the centre ``size`` (int or ``(w, h)``), scaling down first if the image is smaller."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        size = (size, size) if isinstance(size, (int, float)) else size
        self._args = (size, interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class RandomResizedCrop(Block):
    """Crop a random area (``scale`` of the image, aspect ``ratio``) and resize it to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        size = (size, size) if isinstance(size, (int, float)) else size
        self._args = (size, scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class _RandomEnhance(HybridBlock):
    """``F.image.<_op>(x, max(0, 1 - amount), 1 + amount)``: a factor drawn around 1."""

    _op = ""

    def __init__(self, amount):
        super().__init__()
        self._args = (max(0, 1 - amount), 1 + amount)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_RandomEnhance):
    """Scale brightness by a factor from [max(0, 1 - brightness), 1 + brightness]."""

    _op = "random_brightness"

    def __init__(self, brightness):
        super().__init__(brightness)


class RandomContrast(_RandomEnhance):
    """Scale contrast by a factor from [max(0, 1 - contrast), 1 + contrast]."""

    _op = "random_contrast"

    def __init__(self, contrast):
        super().__init__(contrast)


class RandomSaturation(_RandomEnhance):
    """Scale saturation by a factor from [max(0, 1 - saturation), 1 + saturation]."""

    _op = "random_saturation"

    def __init__(self, saturation):
        super().__init__(saturation)


class RandomHue(_RandomEnhance):
    """Shift hue by a factor from [max(0, 1 - hue), 1 + hue] turns (MXNet 1.9.1's range)."""

    _op = "random_hue"

    def __init__(self, hue):
        super().__init__(hue)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA lighting noise with standard deviation ``alpha``."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


class RandomFlipLeftRight(HybridBlock):
    """Flip the image left-right with probability 1/2."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flip the image top-bottom with probability 1/2."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class RandomColorJitter(HybridBlock):
    """Randomly jitter brightness, contrast, saturation and hue, in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomApply(Sequential):
    """Apply ``transforms`` with probability ``p`` (Python's ``random``, as MXNet)."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)


def _check_float32(x):
    if x.dtype != np.float32:
        raise TypeError("This transformation only supports float32. Consider calling it after ToTensor")


class Rotate(Block):
    """Rotate CHW / NCHW float32 images by ``rotation_degrees`` about their centre (``image.imrotate``)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        _check_float32(x)
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate by an angle from ``angle_limits`` with probability ``rotate_with_proba``."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:
            return x
        _check_float32(x)
        return image.random_rotate(x, *self._args)
