"""examples/custom_op.py: the Python softmax loss trains an MLP on the digits through Module."""
import re

import pytest


@pytest.mark.timeout(150)
def test_custom_softmax_trains_and_matches_builtin_softmax(run_example):
    """Two epochs reach well above chance; the custom op's output equals mx.nd.softmax's."""
    out = run_example("custom_op.py", "--num-epochs", "2")
    assert "'softmax_label'" in out             # the prop's 'label' argument became an input
    accuracy, gap = re.search(r"validation accuracy ([\d.]+); .* difference ([\d.e+-]+)", out).groups()
    assert float(accuracy) > 0.7 and float(gap) < 1e-5
