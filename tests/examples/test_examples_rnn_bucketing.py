"""examples/rnn_bucketing.py: mx.rnn cells + BucketSentenceIter + BucketingModule learn the bundled text."""
import re

import pytest

TINY = ("--num-layers", "1", "--num-hidden", "32", "--num-embed", "16", "--num-epochs", "3",
        "--buckets", "20,40,60", "--lr", "0.02")


def perplexities(out: str):
    return ([float(v) for v in re.findall(r"Train-perplexity=([\d.]+)", out)],
            [float(v) for v in re.findall(r"Validation-perplexity=([\d.]+)", out)])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cells", [(), ("--fused",)], ids=["lstm_cells", "fused"])
def test_perplexity_falls(run_example, cells):
    """From about the vocabulary size (55 characters, an untrained model) down on both splits."""
    out = run_example("rnn_bucketing.py", *TINY, *cells, timeout=110)
    train, val = perplexities(out)
    assert "vocabulary 55 tokens" in out
    assert len(train) == len(val) == 3
    assert 20 < train[0] < 70
    assert train[-1] < 0.7 * train[0] and val[-1] < val[0]
