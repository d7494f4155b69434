"""``mx.optimizer``: optimizers, their registry (``create``/``register``) and the ``Updater``.

Layout: ``optimizer.py`` (the base class: learning rates, weight decay, multipliers, update
counts, multi-precision), ``sgd.py`` (SGD, NAG, Signum), ``adam.py`` (Adam, LAMB),
``adaptive.py`` (AdaGrad, RMSProp, AdaDelta), ``ftrl.py`` (Ftrl), ``updater.py`` (Updater), and one
file each for ``Adamax``, ``Nadam``, ``FTML``, ``LARS``, ``LBSGD``, ``SGLD`` and ``DCASGD``.
The update formulas live in the operators of ``mxref/ops/optimizer/``.
"""
from .adam import LAMB, Adam
from .adamax import Adamax
from .adaptive import AdaDelta, AdaGrad, RMSProp
from .dcasgd import DCASGD
from .ftml import FTML
from .ftrl import Ftrl
from .lars import LARS
from .lbsgd import LBSGD
from .nadam import Nadam
from .optimizer import Optimizer, create, register
from .sgd import NAG, SGD, Signum, ccSGD
from .sgld import SGLD
from .updater import Updater, get_updater

__all__ = ["Optimizer", "SGD", "NAG", "Signum", "Adam", "LAMB", "AdaGrad", "RMSProp", "AdaDelta",
           "Ftrl", "Adamax", "Nadam", "FTML", "LARS", "LBSGD", "SGLD", "DCASGD", "ccSGD",
           "Updater", "create", "register", "get_updater"]
