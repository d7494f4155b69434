"""Name registries for serialisable objects (metrics, initializers): register, alias, create-from-config.

A registry maps lower-cased names to classes. ``create`` accepts an instance (returned as is), a
name, a JSON string ``'["name", {kwargs}]'`` or ``'{"<nickname>": "name", ...}'``, or a dict — the
forms MXNet writes into checkpoints and attributes (``Initializer.dumps()``).
"""
from __future__ import annotations

import json
import warnings
from typing import Callable, Dict

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY: Dict[type, Dict[str, type]] = {}


def get_registry(base_class: type) -> Dict[str, type]:
    """A copy of the name -> class table of ``base_class``."""
    return dict(_REGISTRY.setdefault(base_class, {}))


def get_register_func(base_class: type, nickname: str) -> Callable:
    """A decorator ``register(klass, name=None)`` adding subclasses of ``base_class`` by name."""
    table = _REGISTRY.setdefault(base_class, {})

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise TypeError(f"can only register subclasses of {base_class.__name__}, got {klass!r}")
        key = (name or klass.__name__).lower()
        if key in table and table[key] is not klass:
            warnings.warn(f"new {nickname} {klass.__module__}.{klass.__name__} registered as "
                          f"{key!r} overrides {table[key].__module__}.{table[key].__name__}",
                          UserWarning, stacklevel=2)
        table[key] = klass
        return klass

    register.__doc__ = f"Register a {nickname} class under its lower-cased name."
    return register


def get_alias_func(base_class: type, nickname: str) -> Callable:
    """A decorator factory ``alias(*names)`` registering a class under extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg

    return alias


def get_create_func(base_class: type, nickname: str) -> Callable:
    """A factory ``create(name_or_config, *args, **kwargs)`` for ``base_class`` instances."""
    table = _REGISTRY.setdefault(base_class, {})

    def create(*args, **kwargs):
        if args:
            spec, args = args[0], args[1:]
        else:
            if nickname not in kwargs:
                raise ValueError(f"create needs a {nickname} name")
            spec = kwargs.pop(nickname)
        if isinstance(spec, base_class):
            if args or kwargs:
                raise ValueError(f"{nickname} is already an instance; extra arguments are invalid")
            return spec
        if isinstance(spec, dict):
            return create(**spec)
        if not isinstance(spec, str):
            raise TypeError(f"{nickname} must be a name, a config or an instance, got {spec!r}")
        if spec.startswith("[") or spec.startswith("{"):
            if args or kwargs:
                raise ValueError(f"a JSON {nickname} config takes no extra arguments")
            config = json.loads(spec)
            if isinstance(config, dict):
                return create(**config)
            name, kw = config
            return create(name, **kw)
        key = spec.lower()
        if key not in table:
            raise ValueError(f"{key} is not registered. Please register with {nickname}.register "
                             f"first (known: {', '.join(sorted(table))})")
        return table[key](*args, **kwargs)

    create.__doc__ = (f"Create a {nickname} from a name, a JSON config, a dict or an instance; "
                      "extra arguments go to the constructor.")
    return create
