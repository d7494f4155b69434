"""Every environment variable mxref reads by name is documented in docs/env_vars.md."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
# env_int("MXNET_X", ...), os.environ.get("MXREF_Y"), os.environ["NNVM_Z"], os.getenv("MXNET_W")
PATTERN = re.compile(r"""(?:env_(?:int|str|bool|float)\(\s*|environ(?:\.get)?\(\s*|environ\[\s*|"""
                     r"""getenv\(\s*|setdefault\(\s*)["']((?:MXNET|MXREF|NNVM)_[A-Z0-9_]+)["']""")


def _read_names():
    names = {}
    for path in (ROOT / "mxref").rglob("*.py"):
        for match in PATTERN.finditer(path.read_text()):
            names.setdefault(match.group(1), str(path.relative_to(ROOT)))
    return names


def test_env_var_scan_finds_the_known_flags():
    """The scan itself works (it would otherwise pass vacuously)."""
    names = _read_names()
    assert {"MXNET_ENGINE_TYPE", "MXREF_ENABLE_EXT", "NNVM_EXEC_MATCH_RANGE"} <= set(names)


def test_every_env_var_is_documented():
    doc = (ROOT / "docs" / "env_vars.md").read_text()
    missing = {n: where for n, where in _read_names().items() if n not in doc}
    assert not missing, f"add these to docs/env_vars.md: {missing}"
