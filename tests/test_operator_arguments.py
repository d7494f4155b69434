"""mx.operator.get_operator_arguments: inputs then parameters, with dmlc's type strings."""
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.operator import OperatorArguments, get_operator_arguments


def test_activation_as_mxnet_lists_it():
    args = get_operator_arguments("Activation")
    assert isinstance(args, OperatorArguments)
    assert args.names == ["data", "act_type"] and args.narg == 2
    assert args.types == ["NDArray-or-Symbol",
                          "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]


def test_optional_parameters_and_variadic_inputs():
    pool = get_operator_arguments("Pooling")
    types = dict(zip(pool.names, pool.types))
    assert types["pool_type"] == "{'avg', 'lp', 'max', 'sum'},optional, default='max'"
    assert types["global_pool"] == "boolean, optional, default=0"
    assert types["kernel"] == "Shape(tuple), optional, default=[]"
    assert get_operator_arguments("add_n") == OperatorArguments(1, ["args"], ["NDArray-or-Symbol[]"])
    cast = get_operator_arguments("Cast").types[1]
    assert cast.startswith("{'bfloat16', 'bool', 'float16'") and cast.endswith(", required")


def test_star_import_and_unknown_name():
    assert "get_operator_arguments" in mx.operator.__all__
    with pytest.raises(MXNetError, match="no_such_op"):
        get_operator_arguments("no_such_op")
