"""``mx.gluon.data.vision``: the bundled digits dataset (``Digits``, from ``mxref.io``)."""
from ....io.digits import DigitsDataset as Digits  # noqa: F401
