"""docs/howto/add_a_gpu_kernel.md and docs/architecture/gpu.md are executable: their python blocks
run in order in one namespace (on the CUDA emulator unless MXREF_CUDA names a real GPU)."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "howto" / "add_a_gpu_kernel.md", ROOT / "docs" / "architecture" / "gpu.md"]


def blocks(path: pathlib.Path):
    text = path.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_page_runs(path):
    found = blocks(path)
    assert found, f"{path.name} has no python blocks"
    scope = {"__name__": f"doc_{path.stem}"}
    for line, code in found:
        exec(compile("\n" * (line - 1) + code, str(path), "exec"), scope)
    import mxref as mx
    from mxref import storage
    from mxref._ext.cuda import runtime
    mx.nd.waitall()
    if runtime.backend(required=False) is None:
        storage.reset()


_NAMED = re.compile(r"`((?:mxref|tests|benchmarks|docs)/[\w/.]+)`")


def test_paths_named_in_the_gpu_docs_exist():
    for path in PAGES:
        for name in _NAMED.findall(path.read_text()):
            assert (ROOT / name).exists(), f"{path.name} names {name}, which does not exist"
