"""examples/gluon_mlp.py and gluon_lenet.py: Gluon training on the digits, imperative and hybridized."""
import re

import pytest


def accuracies(out: str):
    train = [float(v) for v in re.findall(r"train accuracy ([\d.]+)", out)]
    return train, float(re.search(r"validation accuracy ([\d.]+)", out).group(1))


@pytest.mark.timeout(90)
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_gluon_mlp_learns_the_digits(run_example, hybridize):
    """Two short epochs lift training accuracy from chance towards 0.9 and validation past 0.85."""
    out = run_example("gluon_mlp.py", "--num-epochs", "2", *(["--hybridize"] if hybridize else []),
                      timeout=80)
    train, val = accuracies(out)
    assert train[-1] > train[0] and train[-1] > 0.8
    assert val > 0.85
    assert ("hybridized" if hybridize else "imperative") in out


@pytest.mark.timeout(90)
def test_gluon_mlp_hybridized_matches_imperative(run_example):
    """Same seeds, same shuffle: the traced graph trains to the same losses as the layer-by-layer run."""
    imperative = run_example("gluon_mlp.py", "--num-epochs", "1", "--max-batches", "10", timeout=80)
    hybridized = run_example("gluon_mlp.py", "--num-epochs", "1", "--max-batches", "10", "--hybridize",
                             timeout=80)
    loss = re.compile(r"loss ([\d.]+) train accuracy ([\d.]+)")
    assert loss.findall(imperative) == loss.findall(hybridized)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_gluon_lenet_learns_and_exports(run_example, hybridize, tmp_path):
    """Two epochs of LeNet beat 0.8 on validation; hybridized, the exported model reloads identically."""
    extra = ["--hybridize", "--export", str(tmp_path / "lenet")] if hybridize else []
    out = run_example("gluon_lenet.py", "--num-epochs", "2", *extra, timeout=110)
    train, val = accuracies(out)
    assert train[-1] > train[0]
    assert val > 0.8
    if hybridize:
        diff = float(re.search(r"reloaded max \|difference\| ([\d.e+-]+)", out).group(1))
        assert diff < 1e-6
        assert (tmp_path / "lenet-symbol.json").exists()
