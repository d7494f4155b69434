"""examples/lstm_lm.py: the Gluon LSTM language model learns the bundled text, imperative and hybridized."""
import re

import pytest


def perplexities(out: str):
    return ([float(v) for v in re.findall(r"train perplexity\s+([\d.]+)", out)],
            [float(v) for v in re.findall(r"val perplexity\s+([\d.]+)", out)])


@pytest.mark.timeout(150)
def test_char_lstm_perplexity_falls_on_train_and_validation(run_example):
    """From about the vocabulary size (55, an untrained model) to well under half on both splits."""
    out = run_example("lstm_lm.py", "--epochs", "3", timeout=140)
    train, val = perplexities(out)
    assert 45 < train[0] < 70
    assert train[-1] < 20 and val[-1] < 25
    assert "sample: MENENIUS:" in out


@pytest.mark.timeout(150)
def test_hybridized_word_model_trains(run_example):
    """The word-level model, hybridized, lowers its training perplexity from about 577 (the vocabulary)."""
    out = run_example("lstm_lm.py", "--epochs", "2", "--level", "word", "--hybridize", timeout=140)
    train, _ = perplexities(out)
    assert "vocabulary 577" in out
    assert train[0] > 400 and train[-1] < 0.7 * train[0]
