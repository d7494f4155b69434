"""``mx.optimizer``: optimizers, their registry (``create``/``register``) and the ``Updater``.

Layout: ``optimizer.py`` (the base class: learning rates, weight decay, multipliers, update
counts, multi-precision), ``sgd.py`` (SGD, NAG, Signum), ``adam.py`` (Adam, LAMB),
``adaptive.py`` (AdaGrad, RMSProp, AdaDelta), ``ftrl.py`` (Ftrl), ``updater.py`` (Updater).
The update formulas live in the operators of ``mxref/ops/optimizer/``.
"""
from .adam import LAMB, Adam
from .adaptive import AdaDelta, AdaGrad, RMSProp
from .ftrl import Ftrl
from .optimizer import Optimizer, create, register
from .sgd import NAG, SGD, Signum
from .updater import Updater, get_updater

__all__ = ["Optimizer", "SGD", "NAG", "Signum", "Adam", "LAMB", "AdaGrad", "RMSProp", "AdaDelta",
           "Ftrl", "Updater", "create", "register", "get_updater"]
