"""``mx.gluon``: the imperative-first training interface (Blocks, Parameters, Trainer, losses, data)."""
from . import contrib, data, loss, model_zoo, nn, rnn, utils  # noqa: F401
from .block import Block, HybridBlock, SymbolBlock  # noqa: F401
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict  # noqa: F401
from .trainer import Trainer  # noqa: F401
