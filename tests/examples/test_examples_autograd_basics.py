"""examples/autograd_basics.py: every closed-form check passes and the regression converges."""
import re

import pytest


@pytest.mark.timeout(120)
def test_autograd_basics_checks_pass_and_regression_converges(run_example):
    """All 'ok' lines print (each is an assert in the example); the final loss is tiny."""
    out = run_example("autograd_basics.py", "--steps", "60")
    assert out.count(" ok\n") == 6
    losses = [float(v) for v in re.findall(r"loss ([\d.]+)", out)]
    assert losses[0] > 1 and losses[-1] < 1e-3
