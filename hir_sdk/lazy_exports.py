"""Package names imported on first use (PEP 562), for a package whose modules load slow
libraries (polars, torch, TorchRec) while some of its names are needed without them:
the `hir` command builds its parser from light modules of such packages.

A lazy package maps each name it exports to the module of the package that defines it,
keeps `__all__` and, for type checkers, the same names as imports under `TYPE_CHECKING`
(tests/test_packaging.py checks that the three agree), and ends with

```python
__getattr__, __dir__ = lazy_exports(__name__, _MODULES)
```

No exported name may also be the name of one of the package's modules: importing that
module would set the package's attribute to the module, hiding the name.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, modules: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: each name of `modules` resolves to
    the attribute of that name in the module `package.<modules[name]>`, imported on the
    name's first use."""

    def __getattr__(name: str) -> object:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *modules})

    return __getattr__, __dir__
