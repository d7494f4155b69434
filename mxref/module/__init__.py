"""``mx.mod``: modules, the intermediate training API (``Module``, ``BucketingModule``).

``base_module.py`` (fit/score/predict loops), ``module.py`` (one Symbol, data-parallel over
contexts), ``executor_group.py`` (one executor per context, batch slicing),
``bucketing_module.py`` (one Module per bucket key, parameters shared),
``sequential_module.py`` (modules chained), ``python_module.py`` / ``python_loss_module.py``
(computation written in Python).
"""
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .module import Module
from .python_loss_module import PythonLossModule
from .python_module import PythonModule
from .sequential_module import SequentialModule

__all__ = ["BaseModule", "Module", "BucketingModule", "DataParallelExecutorGroup",
           "SequentialModule", "PythonModule", "PythonLossModule"]
