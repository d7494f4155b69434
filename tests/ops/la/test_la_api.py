"""Where the linalg operators appear: mx.nd.linalg / mx.sym.linalg, the top-level linalg_* aliases
MXNet 1.9.1 has (all but syevd), the _backward_linalg_* ops, signatures, docs and Gluon's F."""
import inspect

import numpy as np
import pytest

import mxref as mx
from mxref.ops import registry

NAMES = ["det", "extractdiag", "extracttrian", "gelqf", "gemm", "gemm2", "inverse", "makediag", "maketrian",
         "potrf", "potri", "slogdet", "sumlogdiag", "syevd", "syrk", "trmm", "trsm"]


def test_namespaces_and_aliases_as_in_mxnet():
    """The same names as MXNet 1.9.1's dir(mx.nd.linalg), dir(mx.nd) and dir(mx.nd._internal)."""
    assert sorted(n for n in dir(mx.nd.linalg) if not n.startswith("_")) == NAMES
    assert sorted(n for n in dir(mx.sym.linalg) if not n.startswith("_")) == NAMES
    aliases = sorted(n for n in dir(mx.nd) if n.startswith("linalg_"))
    assert aliases == [f"linalg_{n}" for n in NAMES if n != "syevd"]
    assert all(hasattr(mx.sym, a) for a in aliases)
    backward = sorted(n for n in dir(mx.nd._internal) if "linalg" in n)
    assert backward == [f"_backward_linalg_{n}" for n in NAMES]
    assert registry.get("linalg_gemm") is registry.get("_linalg_gemm")


@pytest.mark.parametrize("name,inputs,params", [
    ("gemm", ["A", "B", "C"], ["transpose_a", "transpose_b", "alpha", "beta", "axis"]),
    ("gemm2", ["A", "B"], ["transpose_a", "transpose_b", "alpha", "axis"]),
    ("trsm", ["A", "B"], ["transpose", "rightside", "lower", "alpha"]),
    ("syrk", ["A"], ["transpose", "alpha"]), ("potrf", ["A"], ["lower"]),
    ("extracttrian", ["A"], ["offset", "lower"]), ("det", ["A"], [])])
def test_signatures_and_docs(name, inputs, params):
    """MXNet's argument names in order; docstrings carry the math."""
    fn = getattr(mx.nd.linalg, name)
    sig = list(inspect.signature(fn).parameters)
    assert sig[:len(inputs) + len(params)] == inputs + params
    assert "out" in sig and name in fn.__doc__


def test_defaults_match_mxnet():
    """Defaults: alpha = beta = 1, axis = -2, lower = True, offset = 0, transposes off."""
    p = registry.get("_linalg_gemm").parse_params({})
    assert p == {"transpose_a": False, "transpose_b": False, "alpha": 1.0, "beta": 1.0, "axis": -2}
    assert registry.get("_linalg_trmm").parse_params({}) == {"transpose": False, "rightside": False,
                                                             "lower": True, "alpha": 1.0}
    assert registry.get("_linalg_maketrian").parse_params({}) == {"offset": 0, "lower": True}


def test_gluon_hybrid_block_uses_F_linalg():
    """A HybridBlock calling F.linalg.* runs the same imperatively and hybridized."""
    class Gram(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.linalg.sumlogdiag(F.linalg.potrf(F.linalg.syrk(x) + 3 * F.ones_like(F.linalg.syrk(x))))

    x = mx.nd.array(np.random.default_rng(0).standard_normal((2, 3, 3)))
    net = Gram()
    y0 = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), y0, rtol=1e-5)


def test_symbol_json_round_trip():
    """A linalg graph saved to JSON loads back with its parameters."""
    s = mx.sym.linalg.trsm(mx.sym.var("a"), mx.sym.var("b"), rightside=True, alpha=2.0)
    back = mx.sym.load_json(s.tojson())
    assert back.tojson() == s.tojson()
    assert back.attr_dict()[s.name]["rightside"] == "True"
