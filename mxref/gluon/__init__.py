"""``mx.gluon``: the imperative-first training interface (Blocks, Parameters, Trainer, losses, data)."""
from . import nn  # noqa: F401
from .block import Block, HybridBlock, SymbolBlock  # noqa: F401
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict  # noqa: F401
