"""The operator test harness (``mxref.op_check``) catches what it is for: a wrong gradient, a fast
kernel that is wrong, or one that quietly declines and so is never compared."""
import numpy as np
import pytest

from mxref import op_check
from mxref._ext.switch import fast_kernels
from mxref.graph import NodeEntry, make_node
from mxref.ops import registry
from mxref.ops.registry import OpDef, assign


def _cube(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0] ** 3)


def _wrong_grad(node, ograds):      # 2 x * ograd instead of 3 x^2 * ograd
    n = make_node("_oc_twice_x", [ograds[0], node.inputs[0]], node.name + "_backward")
    return [NodeEntry(n, 0, 0)]


def _register():
    if not registry.exists("_oc_cube"):
        registry.register(OpDef("_oc_cube", _cube, gradient=_wrong_grad))
        registry.register(OpDef("_oc_twice_x", lambda o, p, i, out, r: assign(out[0], r[0], 2 * i[0] * i[1]),
                                arguments=("ograd", "data")))


def test_run_op_forward_and_reference():
    _register()
    x = np.array([1.0, -2.0, 0.5])
    for kernel in (None, "reference"):
        np.testing.assert_array_equal(op_check.run_op("_oc_cube", [x], kernel=kernel)[0], x ** 3)


def test_check_op_gradient_catches_a_wrong_gradient():
    _register()
    with pytest.raises(AssertionError, match="_oc_cube: gradient of input 0"):
        op_check.check_op_gradient("_oc_cube", [np.array([0.5, 1.5, -1.0])])


def test_a_declining_kernel_is_not_taken_for_a_comparison():
    """``fast_and_reference`` fails when the fast kernel never ran; ``check_kernels`` fails when it
    declines the case, and with ``expect_fast=False`` when it takes a case meant for the reference."""
    _register()
    never = registry.register_kernel("_oc_cube", "cpu", _cube, applies=lambda p, i, o, r: False)
    try:
        with fast_kernels():
            with pytest.raises(AssertionError, match="did not run"):
                op_check.fast_and_reference(lambda: op_check.run_op("_oc_cube", [np.ones(2)]), ["_oc_cube"])
        with pytest.raises(AssertionError, match="declines"):
            op_check.check_kernels("_oc_cube", [np.ones(2)])
        op_check.check_kernels("_oc_cube", [np.ones(2)], expect_fast=False)
    finally:
        registry.unregister_kernel(never)
    always = registry.register_kernel("_oc_cube", "cpu", _cube)
    try:
        with pytest.raises(AssertionError, match="meant for the reference"):
            op_check.check_kernels("_oc_cube", [np.ones(2)], expect_fast=False)
        with fast_kernels():
            fast, ref = op_check.fast_and_reference(lambda: op_check.run_op("_oc_cube", [np.ones(2) * 2]),
                                                    ["_oc_cube"])
        np.testing.assert_array_equal(fast[0], ref[0])
    finally:
        registry.unregister_kernel(always)


def test_an_inexact_kernel_is_held_to_its_stated_tolerance():
    _register()
    close = registry.register_kernel("_oc_cube", "cpu",
                                     lambda o, p, i, out, r: assign(out[0], r[0], i[0] ** 3 * (1 + 1e-9)),
                                     exact=False, tol={"float64": (1e-8, 0.0)})
    try:
        op_check.check_kernels("_oc_cube", [np.array([1.0, 2.0])])
        with pytest.raises(AssertionError):            # a test may ask for less than the promise
            op_check.check_kernels("_oc_cube", [np.array([1.0, 2.0])], rtol=1e-12)
        with pytest.raises(Exception, match="no tolerance for float32"):
            op_check.check_kernels("_oc_cube", [np.array([1.0, 2.0], "f4")])
    finally:
        registry.unregister_kernel(close)
