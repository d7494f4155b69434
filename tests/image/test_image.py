"""mx.image: decoding, resizing and cropping against MXNet 1.9.1's results (which come from OpenCV)."""
import pathlib

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError

pytest.importorskip("PIL")
FIX = np.load(pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "image" / "image_mxnet191.npz")
SRC = mx.nd.array(FIX["rgb"], dtype=np.uint8)


def test_imdecode_png_is_exact_in_every_mode():
    data = FIX["PNG/bytes"].tobytes()
    for key, kwargs in (("rgb", {}), ("bgr", {"to_rgb": 0}), ("gray", {"flag": 0})):
        got = mx.image.imdecode(data, **kwargs)
        assert got.dtype == np.uint8 and got.shape == FIX["PNG/" + key].shape
        if key == "gray":    # OpenCV's and Pillow's RGB->gray weights round differently by one step
            assert np.abs(got.asnumpy().astype(int) - FIX["PNG/gray"]).max() <= 1
        else:
            np.testing.assert_array_equal(got.asnumpy(), FIX["PNG/" + key])


def test_imdecode_jpeg_within_decoder_rounding():
    got = mx.image.imdecode(FIX["JPEG/bytes"].tobytes()).asnumpy().astype(int)
    assert got.shape == FIX["JPEG/rgb"].shape
    assert np.abs(got - FIX["JPEG/rgb"]).max() <= 3      # two libjpeg builds' IDCT and upsampling


def test_imread_and_bad_input(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(FIX["PNG/bytes"].tobytes())
    np.testing.assert_array_equal(mx.image.imread(str(path)).asnumpy(), FIX["PNG/rgb"])
    with pytest.raises(MXNetError, match="not an image"):
        mx.image.imdecode(b"not an image")
    with pytest.raises(MXNetError, match="cannot read"):
        mx.image.imread(str(tmp_path / "missing.png"))


@pytest.mark.parametrize("interp,tol", [(0, 0), (1, 1), (2, 1), (3, 0)])
def test_imresize_gives_opencvs_pixels(interp, tol):
    """0 nearest, 1 bilinear, 2 bicubic, 3 area: OpenCV's codes, as MXNet passes them."""
    got = mx.image.imresize(SRC, 30, 20, interp=interp).asnumpy().astype(int)
    want = FIX[f"resize/{interp}"].astype(int)
    assert got.shape == want.shape == (20, 30, 3)
    # OpenCV computes bilinear and bicubic in fixed point: a rounding step apart at most.
    assert np.abs(got - want).max() <= tol


def test_resize_short_and_crops_have_mxnets_geometry():
    short = mx.image.resize_short(SRC, 24).asnumpy().astype(int)
    assert short.shape == FIX["resize_short"].shape and np.abs(short - FIX["resize_short"]).max() <= 1
    crop, box = mx.image.center_crop(SRC, (20, 16))
    assert tuple(box) == tuple(FIX["center_crop/box"]) and crop.shape == FIX["center_crop"].shape
    np.testing.assert_array_equal(mx.image.fixed_crop(SRC, 3, 4, 20, 10).asnumpy(), FIX["fixed_crop"])
    with pytest.raises(MXNetError, match="not inside"):
        mx.image.fixed_crop(SRC, 40, 4, 20, 10)


def test_color_normalize_and_random_crop():
    got = mx.image.color_normalize(SRC.astype("float32"), mx.nd.array([120, 110, 100]),
                                   mx.nd.array([50, 60, 70]))
    np.testing.assert_allclose(got.asnumpy(), FIX["color_normalize"], rtol=1e-6)
    crop, (x0, y0, w, h) = mx.image.random_crop(SRC, (10, 8))
    np.testing.assert_array_equal(crop.asnumpy(), FIX["rgb"][y0:y0 + h, x0:x0 + w])
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)


def test_copy_make_border_modes():
    img = mx.nd.array(np.arange(12).reshape(2, 2, 3), dtype=np.uint8)
    np.testing.assert_array_equal(mx.image.copyMakeBorder(img, 1, 0, 0, 1, type=1).asnumpy(),
                                  np.pad(img.asnumpy(), ((1, 0), (0, 1), (0, 0)), mode="edge"))
    padded = mx.image.copyMakeBorder(img, 1, 1, 1, 1, value=7).asnumpy()
    assert padded[0, 0, 0] == 7 and padded[1, 1, 0] == 0
