"""examples/finetune_imagefolder.py and imagerecord_module.py on tiny settings: both image pipelines
(image folder -> Estimator, im2rec -> ImageRecordIter -> Module) run end to end and learn."""
import os
import re

import pytest


@pytest.mark.timeout(300)
def test_finetune_imagefolder_learns_the_new_classes(run_example, tmp_path):
    """16x16 images, 80 pretraining and 30 fine-tuning images per digit: the fine-tuned head beats
    chance (0.2 for five classes) by a wide margin (0.77 when measured); the folders, the
    checkpoint and the plot (or the message saying why not) are there."""
    out = run_example("finetune_imagefolder.py", "--workdir", str(tmp_path), "--image-size", "16",
                      "--pretrain-per-class", "80", "--pretrain-epochs", "2", "--per-class", "30",
                      "--epochs", "4", "--no-zoo", timeout=280)
    assert "pretraining the body on digits 0-4" in out
    accuracy = float(re.search(r"fine-tuned validation accuracy ([\d.]+)", out).group(1))
    assert accuracy > 0.4
    assert sorted(os.listdir(tmp_path / "finetune" / "train")) == ["5", "6", "7", "8", "9"]
    assert len(os.listdir(tmp_path / "finetune" / "train" / "5")) == 30
    assert (tmp_path / "checkpoints" / "finetune-best.params").exists()
    assert (tmp_path / "finetune_history.png").exists() or "skipping the plot" in out


@pytest.mark.timeout(300)
def test_imagerecord_module_learns(run_example, tmp_path):
    """30 images per digit at 16x16, packed by im2rec and trained for 3 epochs: validation accuracy
    well above chance (0.1; 0.59 when measured)."""
    out = run_example("imagerecord_module.py", "--workdir", str(tmp_path), "--image-size", "16",
                      "--per-class", "30", "--num-epochs", "3", timeout=280)
    packed = {"digits_train.rec", "digits_train.idx", "digits_val.rec", "digits_val.idx"}
    assert packed <= set(os.listdir(tmp_path))
    assert "python -m mxref.tools.im2rec --list --recursive" in out
    accuracy = float(re.search(r"validation accuracy ([\d.]+)", out).group(1))
    assert accuracy > 0.3
