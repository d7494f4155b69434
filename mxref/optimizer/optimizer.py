"""The ``Optimizer`` base class: learning rate and weight decay per parameter, update counts, registry.

An optimizer turns ``(index, weight, grad, state)`` into an in-place update of ``weight``. The
base class holds what every optimizer shares:

* ``lr`` (or an ``lr_scheduler`` called with ``num_update``), ``wd``, ``rescale_grad``,
  ``clip_gradient`` (``None`` = off);
* per-parameter multipliers ``lr_mult`` / ``wd_mult``, keyed by index or by name (through
  ``param_idx2name``), read from a symbol's ``__lr_mult__`` / ``__wd_mult__`` attributes, or from
  Gluon parameters (``param_dict``). When names are known, only ``*_weight`` and ``*_gamma``
  get weight decay by default;
* update counting: each index counts its own updates (1 at the first), and ``num_update`` is
  the largest count, which is what the scheduler sees;
* multi-precision: with ``multi_precision=True`` a float16 weight is updated through a float32
  master copy kept in its state.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Sequence

import numpy

from .. import ndarray as nd

__all__ = ["Optimizer", "register", "create"]


class Optimizer:
    """Base class of all optimizers (``mx.optimizer.Optimizer``).

    Parameters
    ----------
    rescale_grad : float
        Multiply gradients by this first (``Module`` sets ``1/batch_size``).
    param_idx2name : dict of int to str, optional
        Parameter names by index; with names, ``wd_mult`` defaults to 0 except for ``*_weight``
        and ``*_gamma``, and ``lr_mult``/``wd_mult`` may be keyed by name.
    wd : float
        Weight decay coefficient.
    clip_gradient : float, optional
        Clip the rescaled gradient to ``[-clip_gradient, clip_gradient]``; ``None`` disables it.
    learning_rate : float, optional
        The learning rate; overrides the scheduler's ``base_lr``. Default 0.01 without a scheduler.
    lr_scheduler : LRScheduler, optional
        Gives the learning rate from ``num_update``.
    sym : Symbol, optional
        Read ``__lr_mult__`` / ``__wd_mult__`` attributes of its arguments.
    begin_num_update : int
        The update count to start from (when resuming training).
    multi_precision : bool
        Keep a float32 master copy of float16 weights and update that.
    param_dict : dict of int to gluon.Parameter, optional
        Gluon parameters by index, whose ``lr_mult``/``wd_mult`` take precedence (not pickled).
    """

    opt_registry: Dict[str, type] = {}

    def __init__(self, rescale_grad: float = 1., param_idx2name: Optional[Dict[int, str]] = None,
                 wd: float = 0., clip_gradient: Optional[float] = None,
                 learning_rate: Optional[float] = None, lr_scheduler=None, sym=None,
                 begin_num_update: int = 0, multi_precision: bool = False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None and lr_scheduler.base_lr != learning_rate:
            warnings.warn("learning rate from ``lr_scheduler`` has been overwritten by "
                          "``learning_rate`` in optimizer.", UserWarning, stacklevel=2)
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: Dict[Any, float] = {}
        self.wd_mult: Dict[Any, float] = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        # One table of per-index counts per device: with several devices each holds a copy of
        # every weight, and the copies must not count each other's updates.
        self._all_index_update_counts: Dict[int, Dict[Any, int]] = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise ValueError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = dict(param_idx2name)
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- registry ----------------------------------------------------------------------------
    @staticmethod
    def register(klass: type) -> type:
        """Register an optimizer class under its lower-cased class name (a decorator)."""
        if not isinstance(klass, type):
            raise TypeError(f"register expects a class, got {klass!r}")
        name = klass.__name__.lower()
        old = Optimizer.opt_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"New optimizer {klass.__module__}.{klass.__name__} is overriding existing "
                          f"optimizer {old.__module__}.{old.__name__}", stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs) -> "Optimizer":
        """An optimizer by (case-insensitive) name: ``create_optimizer('sgd', learning_rate=0.1)``."""
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            raise ValueError(f"Cannot find optimizer {name}")
        return klass(**kwargs)

    # -- learning rate -----------------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The current learning rate (from the scheduler at ``num_update`` when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate; refused when a scheduler owns it."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of the "
                              "optimizer only when the LRScheduler of the optimizer is undefined.")
        self.lr = lr

    def set_lr_mult(self, args_lr_mult: Dict[Any, float]) -> None:
        """Set learning-rate multipliers by name or index (symbol ``__lr_mult__`` attrs come first)."""
        self.lr_mult = self._sym_mults("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: Dict[Any, float]) -> None:
        """Set weight-decay multipliers by name or index.

        Named parameters other than ``*_weight`` / ``*_gamma`` default to 0 (no decay of biases
        and BatchNorm's beta); symbol ``__wd_mult__`` attributes and ``args_wd_mult`` override.
        """
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not (n.endswith("_weight") or n.endswith("_gamma"))}
        self.wd_mult.update(self._sym_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _sym_mults(self, key: str) -> Dict[str, float]:
        if not self.sym_info:
            return {}
        attr, arg_names = self.sym_info
        return {n: float(attr[n][key]) for n in arg_names if n in attr and key in attr[n]}

    def _set_current_context(self, device_id: int) -> None:
        """Switch to the update counts of device ``device_id``."""
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index) -> None:
        """Count one more update of ``index`` (or of each index in a list)."""
        for idx in (index if isinstance(index, (list, tuple)) else [index]):
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _mults(self, indices: Sequence, base: float, table: Dict, attr: str) -> List[float]:
        out = []
        for index in indices:
            if index in self.param_dict:
                out.append(base * getattr(self.param_dict[index], attr))
            elif index in table:
                out.append(base * table[index])
            elif index in self.idx2name:
                out.append(base * table.get(self.idx2name[index], 1.0))
            else:
                out.append(base)
        return out

    def _get_lrs(self, indices: Sequence) -> List[float]:
        """Learning rates of ``indices``: the current rate times each one's ``lr_mult``."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return self._mults(indices, lr, self.lr_mult, "lr_mult")

    def _get_lr(self, index) -> float:
        return self._get_lrs([index])[0]

    def _get_wds(self, indices: Sequence) -> List[float]:
        """Weight decays of ``indices``: ``wd`` times each one's ``wd_mult``."""
        return self._mults(indices, self.wd, self.wd_mult, "wd_mult")

    def _get_wd(self, index) -> float:
        return self._get_wds([index])[0]

    @staticmethod
    def _zero_states(weight, n: int) -> tuple:
        """``n`` zero arrays shaped, placed and typed like ``weight`` (moment estimates and the like)."""
        return tuple(nd.zeros(weight.shape, weight.context, dtype=weight.dtype) for _ in range(n))

    def _clip(self) -> dict:
        """The ``clip_gradient`` keyword for the update operators (omitted when clipping is off)."""
        return {"clip_gradient": self.clip_gradient} if self.clip_gradient else {}

    # -- states and updates ------------------------------------------------------------------
    def create_state(self, index, weight):
        """The optimizer state of one weight (``None``, an NDArray or a tuple of them)."""
        return None

    def create_state_multi_precision(self, index, weight):
        """``create_state``, plus a float32 master copy first when updating a float16 weight."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32 = weight.astype(numpy.float32)
            return (weight32, self.create_state(index, weight32))
        if weight.dtype == numpy.float16:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the optimizer",
                          stacklevel=2)
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state) -> None:
        """Update ``weight`` in place from ``grad`` (asynchronously: one or more engine ops)."""
        raise NotImplementedError()

    def update_multi_precision(self, index, weight, grad, state) -> None:
        """``update``, through the float32 master copy when one was made for this weight."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight32, inner = state
            self.update(index, weight32, grad.astype(numpy.float32), inner)
            nd.cast(weight32, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    # -- pickling: the kvstore sends optimizers to servers; Gluon parameters stay behind ---------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("param_dict", None)
        return state

    def __setstate__(self, state):
        self.__dict__ = state
        self.param_dict = {}


register = Optimizer.register
create = Optimizer.create_optimizer
