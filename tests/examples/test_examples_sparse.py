"""The sparse examples (examples/sparse/) stay working: small sizes, hard timeouts, real metrics.

The CTR generator's data is made once per module; the learners must beat the constant click-rate
predictor on the test set (AUC well above 0.5), locally and on parameter servers under mpiexec
(skipped without MPI); word2vec must put every generated word's nearest neighbour in its own
class. The FM and FFM gradients are checked against central differences.
"""
import re
import sys

import numpy as np
import pytest
from mpi_support import HAVE_MPI, ROOT, loopback_env, run_per_rank

sys.path.insert(0, str(ROOT / "examples" / "sparse"))
import factorization_machine as fmm  # noqa: E402

import mxref as mx  # noqa: E402

RESULT = re.compile(r"worker (\d) of (\d) .*test logloss ([\d.]+) auc ([\d.]+) \(true model: logloss "
                    r"([\d.]+) auc ([\d.]+)\)")


@pytest.fixture(scope="module")
def ctr(tmp_path_factory):
    out = tmp_path_factory.mktemp("ctr")
    import ctr_data
    truth = ctr_data.main(["--out", str(out), "--rows", "6000", "--test-rows", "2000", "--features",
                           "20000", "--fields", "8"])
    assert 0.5 < truth["auc"] < 1 and 0 < truth["logloss"] < 0.7
    assert (out / "train.libsvm").read_text().count("\n") == 6000
    return out


def _check(out, workers):
    rows = RESULT.findall(out)
    assert sorted(r[:2] for r in rows) == [(str(w), str(workers)) for w in range(workers)], out
    for *_, loss, auc, true_loss, true_auc in rows:
        assert 0.6 < float(auc) <= float(true_auc) + 0.02, out
        assert float(loss) < 0.75 and float(true_loss) < float(loss) + 0.02, out


@pytest.mark.timeout(150)
@pytest.mark.parametrize("script,args", [
    ("linear_classification.py", ["--epochs", "2"]),
    ("factorization_machine.py", ["--model", "fm", "--epochs", "1"]),
    ("factorization_machine.py", ["--model", "ffm", "--epochs", "1"])],
    ids=["linear", "fm", "ffm"])
def test_ctr_examples_learn_locally(run_example, ctr, tmp_path, script, args):
    out = run_example(f"sparse/{script}", "--data", str(ctr), "--plot", str(tmp_path / "p.png"), *args,
                      timeout=140)
    _check(out, 1)
    assert (tmp_path / "p.png").stat().st_size > 1000


@pytest.mark.skipif(not HAVE_MPI, reason="needs mpi4py and mpiexec")
@pytest.mark.timeout(200)
@pytest.mark.parametrize("script,kvstore", [("linear_classification.py", "dist_sync"),
                                            ("linear_classification.py", "dist_async"),
                                            ("factorization_machine.py", "dist_sync")])
def test_ctr_examples_on_parameter_servers(ctr, tmp_path, script, kvstore):
    """2 workers + 1 server; each worker reads its shard of the file and scores the test set."""
    cmd = [sys.executable, str(ROOT / "examples" / "sparse" / script), "--data", str(ctr), "--kvstore",
           kvstore, "--epochs", "1", "--plot", str(tmp_path / "p.png")]
    proc = run_per_rank(3, cmd, 180, loopback_env(MXREF_NUM_SERVERS=1, MXREF_KV_TIMEOUT=60))
    assert proc.returncode == 0, proc.stdout[-4000:]
    _check(proc.stdout, 2)


@pytest.mark.timeout(120)
def test_word2vec_neighbours(run_example, tmp_path):
    out = run_example("sparse/word2vec.py", "--sentences", "1500", "--epochs", "2", "--plot",
                      str(tmp_path / "w.png"), timeout=110)
    m = re.search(r"loss ([\d.]+) -> ([\d.]+); nearest neighbour of the same class for (\d+)%", out)
    assert m, out
    assert float(m.group(2)) < float(m.group(1)) and int(m.group(3)) >= 90, out
    assert re.search(r"cat: \w+ \(", out), out


def _batch():
    rng = np.random.default_rng(0)
    rows = [[f * 10 + int(rng.integers(10)) for f in range(4) if rng.random() < 0.8] for _ in range(6)]
    indptr = np.cumsum([0] + [len(r) for r in rows])
    ind = np.concatenate(rows)
    val = (rng.random(len(ind)) + 0.5).astype(np.float32)
    return fmm.Batch(mx.nd.sparse.csr_matrix((val, ind, indptr), shape=(6, 40)), 6), rng


@pytest.mark.parametrize("model", ["fm", "ffm"])
def test_fm_gradients_match_central_differences(model):
    b, rng = _batch()
    fields, k = 4, 3
    width = k if model == "fm" else fields * k
    g = rng.standard_normal(6)
    w, v = rng.standard_normal((len(b.ids), 1)), rng.standard_normal((len(b.ids), width))

    def objective(w, v):
        z = fmm.fm_logit(b, w, v)[0] if model == "fm" else fmm.ffm_logit(b, w, v, fields, 40, k)[0]
        return float((g * z).sum())
    if model == "fm":
        _, cache = fmm.fm_logit(b, w, v)
        dw, dv = fmm.fm_grads(b, g, v, cache)
    else:
        _, cache = fmm.ffm_logit(b, w, v, fields, 40, k)
        dw, dv = fmm.ffm_grads(b, g, cache, fields, k)
    for param, grad, which in ((v, dv, "v"), (w, dw, "w")):
        num = np.zeros_like(param)
        for i in np.ndindex(param.shape):
            hi, lo = param.copy(), param.copy()
            hi[i] += 1e-5
            lo[i] -= 1e-5
            args = (w, hi) if which == "v" else (hi, v)
            argl = (w, lo) if which == "v" else (lo, v)
            num[i] = (objective(*args) - objective(*argl)) / 2e-5
        np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-5)
