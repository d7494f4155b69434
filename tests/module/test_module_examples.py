"""examples/module_mlp.py and examples/module_lenet.py run with small settings and learn."""
import importlib.util
import os

import pytest

import mxref as mx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not (hasattr(mx, "mod") and hasattr(mx, "callback")),
                                reason="mxref/__init__.py does not export mod and callback yet")


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_module_mlp_example(tmp_path):
    """Two epochs of Module.fit on the digits: well above chance, checkpoint written."""
    accuracy = load_example("module_mlp").main(["--num-epochs", "2", "--prefix", str(tmp_path / "mlp")])
    assert accuracy > 0.6
    assert (tmp_path / "mlp-0002.params").exists() and (tmp_path / "mlp-symbol.json").exists()


def test_module_lenet_example(tmp_path):
    """Two epochs of the written-out loop; the reloaded checkpoint predicts well above chance."""
    accuracy = load_example("module_lenet").main(["--num-epochs", "2", "--prefix", str(tmp_path / "lenet")])
    assert accuracy > 0.6
