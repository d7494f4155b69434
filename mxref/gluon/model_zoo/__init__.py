"""``mx.gluon.model_zoo``: MXNet 1.x's model definitions and the local store of pretrained parameters."""
from . import model_store, vision  # noqa: F401
