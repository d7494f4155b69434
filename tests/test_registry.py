"""Name registries: register/alias by lower-cased name, create from names, JSON, dicts and instances."""
import warnings

import pytest

from mxref import registry


class Base:
    def __init__(self, a=1, b=2):
        self.a, self.b = a, b


register = registry.get_register_func(Base, "thing")
alias = registry.get_alias_func(Base, "thing")
create = registry.get_create_func(Base, "thing")


@register
@alias("sq", "square_thing")
class Square(Base):
    pass


def test_register_and_alias_lower_case():
    """Classes are found by lower-cased class name and by each alias; get_registry is a copy."""
    table = registry.get_registry(Base)
    assert table["square"] is Square and table["sq"] is Square and table["square_thing"] is Square
    table.clear()
    assert "square" in registry.get_registry(Base)


def test_create_forms():
    """create accepts a name (any case), extra args, a JSON list or dict, a dict, or an instance."""
    assert isinstance(create("SQUARE"), Square)
    assert create("sq", 5, b=6).b == 6
    assert create('["square", {"a": 3}]').a == 3
    assert create('{"thing": "square", "b": 9}').b == 9
    assert create({"thing": "sq", "a": 4}).a == 4
    obj = Square()
    assert create(obj) is obj


def test_create_errors():
    """Unknown names, extra arguments with an instance or JSON, and wrong types are refused."""
    with pytest.raises(ValueError, match="not registered"):
        create("circle")
    with pytest.raises(ValueError):
        create(Square(), 1)
    with pytest.raises(ValueError):
        create('["square", {}]', a=1)
    with pytest.raises(TypeError):
        create(42)
    with pytest.raises(TypeError):
        register(int)


def test_override_warns():
    """Registering another class under a taken name warns and replaces it."""
    class Other(Base):
        pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        register(Other, "sq")
        assert caught and registry.get_registry(Base)["sq"] is Other
        register(Square, "sq")
