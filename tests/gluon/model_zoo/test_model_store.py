"""gluon.model_zoo.model_store: MXNet's file names and checksums, no download, clear errors."""
import hashlib
import pathlib
import shutil

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.gluon.model_zoo import model_store, vision

FIX = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "model_zoo"


def test_a_file_saved_by_mxnets_model_zoo_loads_by_name_and_gives_mxnets_output():
    io = np.load(FIX / "mobilenet0.25_c10_mxnet191_io.npz")
    net = vision.mobilenet0_25(classes=10)
    net.load_parameters(str(FIX / "mobilenet0.25_c10_mxnet191.params"))
    np.testing.assert_allclose(net(mx.nd.array(io["input"])).asnumpy(), io["output"], rtol=1e-4, atol=1e-5)


def test_missing_pretrained_file_names_the_file_and_the_folder(tmp_path):
    with pytest.raises(MXNetError, match=r"resnet18_v1-a0666292\.params.*" + str(tmp_path)):
        vision.resnet18_v1(pretrained=True, root=str(tmp_path))


def test_mxnet_home_sets_the_default_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    assert model_store.default_root() == str(tmp_path / "models")
    with pytest.raises(MXNetError, match=str(tmp_path / "models")):
        model_store.get_model_file("alexnet")


def test_pretrained_loads_a_file_whose_checksum_matches(tmp_path, monkeypatch):
    src = FIX / "mobilenet0.25_c10_mxnet191.params"
    digest = hashlib.sha1(src.read_bytes()).hexdigest()
    # The published file is 2 MB of ImageNet weights; stand in a 10-class file with its own checksum.
    monkeypatch.setitem(model_store._model_sha1, "mobilenet0.25", digest)
    shutil.copy(src, tmp_path / f"mobilenet0.25-{digest[:8]}.params")
    net = vision.get_model("mobilenet0.25", classes=10, pretrained=True, root=str(tmp_path))
    io = np.load(FIX / "mobilenet0.25_c10_mxnet191_io.npz")
    np.testing.assert_allclose(net(mx.nd.array(io["input"])).asnumpy(), io["output"], rtol=1e-4, atol=1e-5)


def test_a_file_with_the_wrong_content_is_refused(tmp_path):
    (tmp_path / "alexnet-44335d1f.params").write_bytes(b"not the published file")
    with pytest.raises(MXNetError, match="SHA-1"):
        model_store.get_model_file("alexnet", root=str(tmp_path))


def test_purge_removes_params_files(tmp_path):
    (tmp_path / "a.params").write_bytes(b"x")
    (tmp_path / "keep.txt").write_bytes(b"x")
    model_store.purge(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
