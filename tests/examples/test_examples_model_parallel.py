"""examples/model_parallel/: matrix factorization with embeddings and dense layers on two devices,
a stacked LSTM with one layer per device, and the GPipe pipeline over cpu(0)/cpu(1)."""
import json
import re

import pytest


@pytest.mark.timeout(120)
def test_matrix_factorization_places_the_embeddings_apart_and_learns(run_example):
    out = run_example("model_parallel/matrix_factorization.py", "--epochs", "3", "--num-samples", "5120",
                      "--show-placement", timeout=110)
    assert "Op:Embedding, Name=user_embed, Device=cpu(0)" in out
    assert "Op:FullyConnected, Name=fc_user, Device=cpu(1)" in out
    assert "Op:_CrossDeviceCopy, Name=user_embed_to_cpu1, Device=cpu(1)" in out
    rmse = [float(v) for v in re.findall(r"train RMSE ([\d.]+)", out)]
    assert len(rmse) == 3 and rmse[-1] < rmse[0]


@pytest.mark.timeout(120)
def test_stacked_lstm_one_layer_per_device(run_example):
    out = run_example("model_parallel/lstm_layers.py", "--epochs", "2", "--hidden", "64", timeout=110)
    assert "placement: lstm0 on cpu(0), lstm1 on cpu(1), decoder on cpu(1)" in out
    ppl = [float(v) for v in re.findall(r"train perplexity ([\d.]+)", out)]
    assert len(ppl) == 2 and ppl[-1] < ppl[0] < 56          # 55 characters: chance is about 55


@pytest.mark.timeout(120)
def test_pipeline_example_trains_and_writes_a_trace(run_example, tmp_path):
    trace = tmp_path / "trace.json"
    out = run_example("model_parallel/pipeline_mlp.py", "--epochs", "2", "--steps", "2", "--hidden", "128",
                      "--trace", str(trace), timeout=110)
    acc = [float(v) for v in re.findall(r"validation accuracy ([\d.]+)", out)]
    assert len(acc) == 2 and acc[-1] > 0.2                  # 10 classes: chance is 0.1
    assert re.search(r"one device: \d+ samples/s\s+pipeline over 2 devices: \d+ samples/s", out)
    rows = {e["args"]["name"] for e in json.loads(trace.read_text())["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"cpu(0)", "cpu(1)"} <= rows
    assert re.search(r"cpu\(0\) busy [\d.]+, cpu\(1\) busy [\d.]+, both at once [\d.]+", out)
