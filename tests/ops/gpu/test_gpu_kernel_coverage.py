"""Every op with a registered gpu kernel is checked against its reference by some GPU test: named
as a string in tests/ops/gpu, or in one of the tables the elementwise tests walk."""
import pathlib
import re

from mxref.ops import registry
from mxref.ops.gpu import elementwise as ew

HERE = pathlib.Path(__file__).parent
WALKED = set(ew.UNARY) | set(ew.UNARY_BACKWARD) | set(ew.BINARY) | set(ew.BROADCAST) | set(ew.SCALAR)


def test_every_gpu_kernel_has_a_test():
    named = set()
    for path in HERE.glob("test_*.py"):
        if path.name != pathlib.Path(__file__).name:
            named |= set(re.findall(r'"([A-Za-z_][\w]*)"', path.read_text()))
    canonical = {registry.get(n).name for n in named | WALKED if _is_op(n)}
    ops = {k.op for k in registry.list_kernels(device_type="gpu")}
    assert ops, "no gpu kernel is registered"
    assert not ops - canonical, f"gpu kernels without a test: {sorted(ops - canonical)}"


def _is_op(name):
    try:
        registry.get(name)
    except Exception:  # noqa: BLE001 - not an operator name
        return False
    return True
