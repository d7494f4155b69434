"""The robust engine's data-only encoding: round trips, refusals, malformed bytes, and the pickle opt-in."""
import math
import pickle
import random

import numpy as np
import pytest

from mxref import collective
from mxref.base import MXNetError
from mxref.collective import codec
from mxref.collective.codec import PICKLED as _PICKLED
from mxref.collective.robust_engine import _pickle, _unpickle


class Opaque:
    def __init__(self, x=1):
        self.x = x

    def __eq__(self, other):
        return isinstance(other, Opaque) and other.x == self.x


class Evil:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


VALUE = {"params": [np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((0, 4), np.int64)],
         "step": 7, 3: (1.5, float("inf"), None, True), "blob": b"\x00\x01", "name": "w",
         "scalars": [np.float64(0.25), np.int8(-3), np.bool_(True)], "empty": {}, "flags": np.array([True])}


def test_round_trip_keeps_values_types_and_dtypes():
    """Arrays (dtype, shape), numpy scalars, tuples, int keys, bytes and inf come back as they went."""
    back = codec.loads(codec.dumps(VALUE))
    assert back.keys() == VALUE.keys()
    for a, b in zip(back["params"], VALUE["params"]):
        assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
    assert back[3] == (1.5, math.inf, None, True) and isinstance(back[3], tuple)
    assert back["blob"] == b"\x00\x01" and back["step"] == 7 and back["name"] == "w"
    assert [type(s) for s in back["scalars"]] == [np.float64, np.int8, np.bool_]
    assert back["empty"] == {} and back["flags"].dtype == np.bool_
    assert math.isnan(codec.loads(codec.dumps(float("nan"))))


def test_objects_and_object_arrays_are_refused_unless_pickling_is_opted_in():
    with pytest.raises(codec.Unsupported, match="Opaque"):
        codec.dumps([Opaque()])
    with pytest.raises(codec.Unsupported, match="dtype object"):
        codec.dumps(np.array([Opaque()], dtype=object))
    with pytest.raises(MXNetError, match="allow_pickle=True"):
        _pickle(Opaque())
    assert _unpickle(_pickle(Opaque(3), allow_pickle=True), allow_pickle=True) == Opaque(3)


def test_a_pickle_from_a_peer_is_refused_without_the_opt_in(tmp_path):
    """Bytes marked as a pickle are not unpickled by a rank that did not opt in."""
    blob = _PICKLED + pickle.dumps(Evil(tmp_path / "pwned"))
    with pytest.raises(MXNetError, match="did not opt in"):
        _unpickle(blob)
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(MXNetError, match="not a data-only encoding"):
        _unpickle(pickle.dumps(Evil(tmp_path / "pwned")))     # a bare pickle is no encoding either
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("edit, why", [
    (lambda b: b[:-1], "buffers end"),
    (lambda b: b.replace(b'"<f4"', b'"|O8"', 1), "not a number"),
    (lambda b: b.replace(b'"<f4"', b'"V16"', 1), "not a number"),
    (lambda b: b.replace(b"[2, 3]", b"[2, 4]", 1), "bytes for shape"),
    (lambda b: b[:10], "not a data-only encoding"),
    (lambda b: b[:20], "header of"),
])
def test_malformed_blobs_are_mxnet_errors(edit, why):
    blob = codec.dumps(VALUE)
    with pytest.raises(MXNetError, match=why):
        codec.loads(edit(blob))


def test_random_byte_edits_raise_only_mxnet_errors():
    """200 seeded byte edits of an encoded checkpoint: each decodes or raises MXNetError, nothing else."""
    blob = codec.dumps(VALUE)
    rng = random.Random(1234)
    for _ in range(200):
        b = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            codec.loads(bytes(b))
        except MXNetError:
            pass


def job(allow):
    """A checkpoint of an arbitrary object: refused by default, carried with the opt-in."""
    version, model, _ = collective.load_checkpoint()
    collective.checkpoint({"model": Opaque(collective.get_rank()), "v": version})
    return collective.version_number()


def test_the_engine_refuses_to_checkpoint_an_object_without_the_opt_in():
    with pytest.raises(MXNetError, match="allow_pickle=True"):
        collective.run_local(2, job, False, engine="robust", timeout=20)
    assert collective.run_local(2, job, True, engine="robust", timeout=20, allow_pickle=True) == [1, 1]
