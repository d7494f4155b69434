"""gluon.utils.download: local URLs, SHA-1 checks, and a clear error without a network."""
import hashlib

import pytest

import mxref as mx
from mxref.base import MXNetError


def test_download_file_url_and_sha1(tmp_path):
    """A file:// URL is copied; a kept file is reused; a wrong hash is an MXNetError."""
    src = tmp_path / "src" / "weights.bin"
    src.parent.mkdir()
    src.write_bytes(b"abc" * 100)
    sha = hashlib.sha1(src.read_bytes()).hexdigest()
    out = tmp_path / "out"
    out.mkdir()
    got = mx.gluon.utils.download(src.as_uri(), path=str(out), sha1_hash=sha)
    assert got == str(out / "weights.bin")
    assert mx.gluon.utils.check_sha1(got, sha)
    src.write_bytes(b"changed")                       # kept file with the right hash is reused
    assert mx.gluon.utils.download(src.as_uri(), path=got, sha1_hash=sha) == got
    with pytest.raises(MXNetError, match="SHA-1"):
        mx.gluon.utils.download(src.as_uri(), path=got, overwrite=True, sha1_hash=sha)


def test_download_without_network(tmp_path):
    """An unreachable URL ends in an MXNetError naming the URL and the target."""
    url = "http://127.0.0.1:9/none/model.params"
    with pytest.raises(MXNetError, match="cannot fetch .*model.params"):
        mx.gluon.utils.download(url, path=str(tmp_path), retries=1)
