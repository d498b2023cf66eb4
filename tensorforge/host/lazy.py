"""Public surfaces whose names load on first use (PEP 562), shared by `tensorforge` and
`tensorforge_measure`: each lists where every public name lives, and `import tensorforge` stays
cheap because nothing behind the surface is imported until a name is asked for.

No typing import here: it would cost the surfaces most of their import time."""

from importlib import import_module


def lazy_names(package, homes, namespace):
    """The module-level `__getattr__` and `__dir__` of surface `package`.

    `homes` maps each public name to 'module' (the same name there) or 'module:attribute';
    `namespace` is the surface's globals(), where a loaded name is kept so it loads once."""

    def __getattr__(name):
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = home.partition(":")
        value = getattr(import_module(module), attribute or name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__
