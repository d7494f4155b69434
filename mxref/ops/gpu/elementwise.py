"""GPU kernels of the elementwise ops (``kernels/elementwise.cu``): unary and their backward ops,
binary, array-with-scalar, broadcast binary, fills and sums, each the ``gpu`` kernel of its op."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .. import activations, broadcast, elemwise, indexing, init_ops, scalar, shape  # noqa: F401
from ..kernels import register_kernel
from ..nn import activation, make_loss  # noqa: F401 - the ops registered here must exist first
from ..registry import get as _get_op
from ._launch import accumulate, as_dtype, float_call, grid_1d, module, opcodes, stream

FAMILY = "elementwise"

# op -> unary code; the backward op of each unary op -> the code of g * f'(z)
UNARY = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "log": "log",
         "sqrt": "sqrt", "square": "square", "abs": "abs", "negative": "negative",
         "reciprocal": "reciprocal", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "log1p": "log1p",
         "expm1": "expm1", "sign": "sign", "softsign": "softsign", "floor": "floor", "ceil": "ceil",
         "_copy": "copy", "BlockGrad": "copy"}
UNARY_BACKWARD = {"_backward_relu": "bwd_relu", "_backward_sigmoid": "bwd_sigmoid",
                  "_backward_tanh": "bwd_tanh", "_backward_exp": "bwd_exp", "_backward_log": "bwd_log",
                  "_backward_sqrt": "bwd_sqrt", "_backward_square": "bwd_square",
                  "_backward_abs": "bwd_abs", "_backward_reciprocal": "bwd_reciprocal",
                  "_backward_sin": "bwd_sin", "_backward_cos": "bwd_cos",
                  "_backward_softsign": "bwd_softsign", "_backward_log1p": "bwd_log1p",
                  "_backward_expm1": "bwd_expm1", "_backward_rsqrt": "bwd_rsqrt"}
# Activation's backward takes the output y for every act_type
ACTIVATION = {"relu": ("relu", "bwd_relu"), "sigmoid": ("sigmoid", "bwd_sigmoid"),
              "tanh": ("tanh", "bwd_tanh"), "softrelu": ("softrelu", "bwd_softrelu"),
              "softsign": ("softsign", "bwd_softsign_y")}
BINARY = {"elemwise_add": "add", "elemwise_sub": "sub", "elemwise_mul": "mul", "elemwise_div": "div",
          "_maximum": "maximum", "_minimum": "minimum", "_power": "power", "_hypot": "hypot",
          "_equal": "equal", "_not_equal": "not_equal", "_greater": "greater",
          "_greater_equal": "greater_equal", "_lesser": "lesser", "_lesser_equal": "lesser_equal"}
BROADCAST = {f"broadcast_{k}": v for k, v in
             {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum",
              "minimum": "minimum", "power": "power", "hypot": "hypot", "equal": "equal",
              "not_equal": "not_equal", "greater": "greater", "greater_equal": "greater_equal",
              "lesser": "lesser", "lesser_equal": "lesser_equal"}.items()}
# scalar op -> (code, reverse)
SCALAR = {"_plus_scalar": ("add", 0), "_minus_scalar": ("sub", 0), "_rminus_scalar": ("sub", 1),
          "_mul_scalar": ("mul", 0), "_div_scalar": ("div", 0), "_rdiv_scalar": ("div", 1),
          "_power_scalar": ("power", 0), "_rpower_scalar": ("power", 1),
          "_maximum_scalar": ("maximum", 0), "_minimum_scalar": ("minimum", 0),
          "_equal_scalar": ("equal", 0), "_not_equal_scalar": ("not_equal", 0),
          "_greater_scalar": ("greater", 0), "_greater_equal_scalar": ("greater_equal", 0),
          "_lesser_scalar": ("lesser", 0), "_lesser_equal_scalar": ("lesser_equal", 0)}


def _code(name: str) -> int:
    return opcodes(FAMILY)[name]


def launch_unary(octx, code: int, x, y, req: str) -> None:
    if req == "null" or y.size == 0:
        return
    grid, block = grid_1d(y.size)
    module(FAMILY, y.dtype).get_function("unary_op")(x, y, code, y.size, accumulate(req), grid=grid,
                                                     block=block, stream=stream(octx))


def launch_binary(octx, code: int, a, b, y, req: str) -> None:
    if req == "null" or y.size == 0:
        return
    grid, block = grid_1d(y.size)
    module(FAMILY, y.dtype).get_function("binary_op")(a, b, y, code, y.size, accumulate(req),
                                                      grid=grid, block=block, stream=stream(octx))


def launch_fill(octx, y, value) -> None:
    if y.size == 0:
        return
    grid, block = grid_1d(y.size)
    module(FAMILY, y.dtype).get_function("fill")(y, as_dtype(value, y.dtype), y.size, grid=grid,
                                                 block=block, stream=stream(octx))


def _unary_kernel(code_name: str):
    def kernel(octx, params, inputs, outputs, req):
        launch_unary(octx, _code(code_name), inputs[0], outputs[0], req[0])
    kernel.__name__ = f"gpu_{code_name}"
    return kernel


def _binary_kernel(code_name: str):
    def kernel(octx, params, inputs, outputs, req):
        launch_binary(octx, _code(code_name), inputs[0], inputs[1], outputs[0], req[0])
    kernel.__name__ = f"gpu_{code_name}"
    return kernel


def _activation(octx, params, inputs, outputs, req):
    launch_unary(octx, _code(ACTIVATION[params["act_type"]][0]), inputs[0], outputs[0], req[0])


def _activation_backward(octx, params, inputs, outputs, req):
    launch_binary(octx, _code(ACTIVATION[params["act_type"]][1]), inputs[0], inputs[1], outputs[0],
                  req[0])


def _scalar_kernel(code_name: str, reverse: int):
    def kernel(octx, params, inputs, outputs, req):
        x, y = inputs[0], outputs[0]
        if req[0] == "null" or y.size == 0:
            return
        grid, block = grid_1d(y.size)
        module(FAMILY, y.dtype).get_function("scalar_op")(
            x, y, as_dtype(params["scalar"], y.dtype), _code(code_name), reverse, y.size,
            accumulate(req[0]), grid=grid, block=block, stream=stream(octx))
    kernel.__name__ = f"gpu_scalar_{code_name}"
    return kernel


def collapse_broadcast(out_shape: Sequence[int], shapes: Sequence[Sequence[int]]
                       ) -> Optional[Tuple[List[int], List[List[int]]]]:
    """Output dims and each input's element strides, with neighbouring axes merged where every
    input treats them alike (both broadcast, or both contiguous), and size-1 axes dropped.
    ``None`` when more than 4 axes remain (the kernel takes 4)."""
    nd = len(out_shape)
    strides_all = []
    for in_shape in shapes:
        full = (1,) * (nd - len(in_shape)) + tuple(in_shape)
        st, acc = [0] * nd, 1
        for i in range(nd - 1, -1, -1):
            st[i] = 0 if full[i] == 1 else acc
            acc *= full[i]
        strides_all.append(st)
    dims = [d for d in out_shape]
    keep = [i for i in range(nd) if dims[i] != 1]
    dims = [dims[i] for i in keep]
    strides_all = [[st[i] for i in keep] for st in strides_all]
    i = len(dims) - 2
    while i >= 0:
        if all(st[i] == st[i + 1] * dims[i + 1] for st in strides_all):
            dims[i] *= dims[i + 1]
            del dims[i + 1]
            for st in strides_all:
                del st[i]          # the merged axis steps like its inner part
        i -= 1
    if len(dims) > 4:
        return None
    pad = 4 - len(dims)
    return [1] * pad + dims, [[0] * pad + st for st in strides_all]


def _broadcast_applies(params, inputs, outputs, req):
    return float_call(params, inputs, outputs, req) and collapse_broadcast(
        outputs[0].shape, [inputs[0].shape, inputs[1].shape]) is not None


def _broadcast_kernel(code_name: str):
    def kernel(octx, params, inputs, outputs, req):
        a, b, y = inputs[0], inputs[1], outputs[0]
        if req[0] == "null" or y.size == 0:
            return
        dims, (sa, sb) = collapse_broadcast(y.shape, [a.shape, b.shape])
        grid, block = grid_1d(y.size)
        module(FAMILY, y.dtype).get_function("broadcast_op")(
            a, b, y, _code(code_name), y.size, dims[1], dims[2], dims[3], *sa, *sb, accumulate(req[0]),
            grid=grid, block=block, stream=stream(octx))
    kernel.__name__ = f"gpu_broadcast_{code_name}"
    return kernel


def launch_broadcast_to(octx, src, src_shape, y, req: str, scale: float = 1.0) -> None:
    """``y (+)= scale * broadcast(src viewed as src_shape)``: the backward of sum and mean."""
    if req == "null" or y.size == 0:
        return
    dims, (sa, sb) = collapse_broadcast(y.shape, [src_shape, src_shape])
    grid, block = grid_1d(y.size)
    fn = module(FAMILY, y.dtype).get_function("broadcast_op")
    fn(src, src, y, _code("first"), y.size, dims[1], dims[2], dims[3], *sa, *sb, accumulate(req),
       grid=grid, block=block, stream=stream(octx))
    if scale != 1.0:
        if req == "add":
            raise NotImplementedError("scaled broadcast with req='add'")
        fn = module(FAMILY, y.dtype).get_function("scalar_op")
        fn(y, y, as_dtype(scale, y.dtype), _code("mul"), 0, y.size, 0, grid=grid, block=block,
           stream=stream(octx))


def _fill_kernel(value_of):
    def kernel(octx, params, inputs, outputs, req):
        if req[0] != "null":
            launch_fill(octx, outputs[0], value_of(params))
    return kernel


def add_n(octx, params, inputs, outputs, req):
    """add_n / ElementWiseSum: four inputs per launch, the next launches accumulate."""
    y = outputs[0]
    if req[0] == "null" or y.size == 0:
        return
    fn = module(FAMILY, y.dtype).get_function("sum4")
    grid, block = grid_1d(y.size)
    acc = accumulate(req[0])
    for start in range(0, len(inputs), 4):
        part = list(inputs[start:start + 4])
        k = len(part)
        part += [None] * (4 - k)
        fn(*part, k, y, y.size, acc, grid=grid, block=block, stream=stream(octx))
        acc = 1


def _float_outputs(params, inputs, outputs, req):
    return all(o.dtype.name in ("float32", "float64") for o in outputs)


def _register(op: str, fn, applies=float_call) -> None:
    name = _get_op(op).name          # the canonical name (aliases share the OpDef)
    # Float results may differ from numpy's in the last bits (the device's own exp, fused ops).
    register_kernel(name, "gpu", fn, applies=applies, name=f"cuda.elementwise.{fn.__name__}",
                    exact=False, tol={"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)})


for _op, _c in UNARY.items():
    _register(_op, _unary_kernel(_c))
for _op, _c in UNARY_BACKWARD.items():
    _register(_op, _binary_kernel(_c))
for _op, _c in BINARY.items():
    _register(_op, _binary_kernel(_c))
for _op, _c in BROADCAST.items():
    _register(_op, _broadcast_kernel(_c), applies=_broadcast_applies)
for _op, (_c, _r) in SCALAR.items():
    _register(_op, _scalar_kernel(_c, _r))
_activation.__name__ = "gpu_activation"
_activation_backward.__name__ = "gpu_activation_backward"
_register("Activation", _activation)
_register("_backward_Activation", _activation_backward)
_register("add_n", add_n)
_copy_first = _unary_kernel("copy")
_copy_first.__name__ = "gpu_copy_first_input"
# Shape-only ops: the bytes are the same, in the same order.
for _op in ("_identity_with_attr_like_rhs", "Flatten", "Reshape", "expand_dims", "squeeze", "reshape_like"):
    _register(_op, _copy_first)
for _op, _value in (("_zeros", lambda p: 0), ("_ones", lambda p: 1), ("_full", lambda p: p["value"]),
                    ("zeros_like", lambda p: 0), ("ones_like", lambda p: 1)):
    _fn = _fill_kernel(_value)
    _fn.__name__ = f"gpu_fill{_op}"
    _register(_op, _fn, applies=_float_outputs)
