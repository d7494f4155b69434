"""mxref.runtime.Features: MXNet's feature names, answered by what this mxref has."""
import pytest

import mxref as mx
from mxref.runtime import Features, feature_list


def test_features_is_one_shared_mapping_with_mxnets_names():
    f = Features()
    assert f is Features()
    assert list(f)[:3] == ["CUDA", "CUDNN", "NCCL"] and "TVM_OP" in f
    assert [x.name for x in feature_list()] == list(f)


def test_capabilities_mxref_has_are_on_and_build_flags_are_off():
    f = Features()
    assert f.is_enabled("profiler") and f.is_enabled("LAPACK") and f.is_enabled("INT64_TENSOR_SIZE")
    assert not f.is_enabled("TVM_OP") and not f.is_enabled("MKLDNN") and not f.is_enabled("CUDNN")
    assert f.is_enabled("CUDA") == (mx.context.num_gpus() > 0)
    assert repr(f["PROFILER"]) == "✔ PROFILER" and repr(f["TVM_OP"]) == "✖ TVM_OP"


def test_unknown_feature_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="unknown"):
        Features().is_enabled("WARP_DRIVE")
