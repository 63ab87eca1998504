"""The toolkit tables and the finder (wgkern/compat/finder.py, quadrants.py, taichi.py), without installing
the finder: every entry names an existing wgkern object, importing an entry never replaces an attribute of
wgkern's objects, and the finder's answers for names the tables do not map."""
from __future__ import annotations

import types

import pytest

import wgkern as wk
from wgkern.compat import finder, toolkit

_ABSENT = object()


@pytest.mark.parametrize("name", ["quadrants", "taichi"])
def test_every_entry_names_a_wgkern_object(name):
    kit = toolkit(name)
    assert kit.modules[name] == "wgkern" and not set(kit.modules) & set(kit.missing)
    for module, target in kit.modules.items():
        assert module == name or module.startswith(name + "."), module
        obj = finder.resolve(target)
        assert isinstance(obj, (types.ModuleType, type, types.SimpleNamespace)), (module, obj)
    for module in kit.missing:
        assert module.partition(".")[0] == name and module.rpartition(".")[0] in kit.modules, module


@pytest.mark.parametrize("name", ["quadrants", "taichi"])
def test_importing_an_entry_never_replaces_an_attribute_of_wgkern(name):
    """Python sets an imported module as an attribute of its parent: where the parent's wgkern object already
    has an attribute of that name, it must be the very object the table gives the child."""
    kit = toolkit(name)
    for module, target in kit.modules.items():
        parent, _, child = module.rpartition(".")
        if parent:
            existing = getattr(finder.resolve(kit.modules[parent]), child, _ABSENT)
            assert existing is _ABSENT or existing is finder.resolve(target), module


def test_finder_answers_only_provided_toolkits():
    own = finder.ProvideFinder()
    assert own.find_spec("quadrants") is None and own.find_spec("numpy") is None
    own.toolkits["quadrants"] = toolkit("quadrants")
    spec = own.find_spec("quadrants.lang.impl")
    assert spec.name == "quadrants.lang.impl" and spec.submodule_search_locations is None
    assert own.find_spec("quadrants.lang").submodule_search_locations == []
    with pytest.raises(ModuleNotFoundError, match=r"quadrants.lang.util holds Quadrants' internal helpers"):
        own.find_spec("quadrants.lang.util")
    with pytest.raises(ModuleNotFoundError, match=r"quadrants.nothing is not one of the Quadrants modules"):
        own.find_spec("quadrants.nothing")
    assert own.find_spec("taichi.math") is None
    assert wk.compat.provided() == ()     # this process's imports were never redirected


def test_resolve_reaches_attributes_and_names_what_is_missing():
    assert finder.resolve("wgkern.types.primitive_types") is wk.types.primitive_types
    assert finder.resolve("wgkern.lang.math") is wk.math
    with pytest.raises(AttributeError, match="no_such_name"):
        finder.resolve("wgkern.lang.math.no_such_name")
    with pytest.raises(ModuleNotFoundError, match="No module named 'nowhere_at_all'"):
        finder.resolve("nowhere_at_all.sub")


@pytest.mark.parametrize("name", ["quadrants", "taichi"])
def test_porting_guide_lists_every_module(name):
    """The finder's errors send users to docs/porting.md for the list of modules: it has every one."""
    from tests.compat.programs import REPO
    guide = (REPO / "docs" / "porting.md").read_text()
    kit = toolkit(name)
    for module, target in kit.modules.items():
        assert f"| `{module}` | `{target}` |" in guide, module
    for module, feature in kit.missing.items():
        assert f"- `{module}`: {feature}" in guide, module


@pytest.mark.parametrize("name", ["quadrants", "taichi"])
def test_no_missing_entry_names_a_module_wgkern_has(name):
    """A module listed as missing whose wgkern namesake exists (`quadrants._logging` once `wgkern._logging` is
    written) belongs in the table's MODULES: the finder would otherwise refuse it."""
    import importlib.util
    for module in toolkit(name).missing:
        namesake = "wgkern" + module[len(name):]
        try:
            found = importlib.util.find_spec(namesake)
        except ModuleNotFoundError:      # a parent that does not exist either
            found = None
        assert found is None, f"{module} is listed as missing, but {namesake} exists: map it in MODULES"
