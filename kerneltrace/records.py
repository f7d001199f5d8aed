"""Record classes for the CLI start-up path: the dataclass subset it uses, without importing dataclasses.

`import dataclasses` pulls in `inspect` (with ast, dis, tokenize: ~10 ms), and each
`@dataclass` builds its methods from generated source (~0.5 ms a class); the hotspot CLI's
start-up path holds 25 such classes and is started once per capture. `record` keeps the same
declarative form — annotated fields in order, defaults, `field(default_factory=…, repr=False)`,
`frozen`, `slots`, `__post_init__` — and builds one `__init__` per class; `__repr__`,
`__eq__` and (frozen) `__hash__` are shared functions over the field names. Modules off the
start-up path keep using dataclasses (docs/architecture.md, "Heavy imports").

Compiling a generated `__init__` costs ≈ 10 µs a field (≈ 4 ms for the CLI's classes, a tenth of
its own start-up); unmarshalling it ≈ 3 µs a class. So the compiled code is kept the way Python
keeps a module's: in `__pycache__` beside this file (one marshalled {source: code} file per
interpreter cache tag), read once per process, written when a class compiled anew (at exit, by
kerneltrace.atomic's writer; never when `sys.dont_write_bytecode` is set, as for `.pyc` files).
A key is the exact generated source, so a changed class never meets stale code; a file that
cannot be read or holds anything else is ignored.
"""

from __future__ import annotations

import marshal
import os
import sys

_MISSING = object()
_CACHE_LIMIT = 512  # entries kept; beyond it only the ones this process used are written
_cache: dict[str, object] | None = None  # generated source -> code, once loaded
_used: set[str] = set()
_compiled_anew = False
# The project's one file writer (kerneltrace.atomic.write_bytes: staged, renamed into place). It
# imports this module (through kerneltrace.errors), so it registers itself here rather than being
# imported; a process that never loaded it writes no cache.
cache_writer = None


def cache_path() -> str | None:
    """The file of compiled `__init__` code (None when the interpreter keeps no bytecode cache)."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", f"records-inits.{tag}.marshal")


def _load_cache() -> dict[str, object]:
    path = cache_path()
    if path is None:
        return {}
    try:
        with open(path, "rb") as file:
            loaded = marshal.loads(file.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    code_type = type(_load_cache.__code__)
    return {key: code for key, code in loaded.items() if isinstance(key, str) and type(code) is code_type}


def _save_cache() -> None:
    """Write the cache (atexit, when some class compiled anew); any failure leaves it as it was."""
    path = cache_path()
    if path is None or _cache is None or sys.dont_write_bytecode:
        return
    if cache_writer is None:
        return
    kept = _cache if len(_cache) <= _CACHE_LIMIT else {key: _cache[key] for key in _used}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        cache_writer(path, marshal.dumps(kept))
    except Exception:  # a cache is never a reason for a run to fail
        pass


def _compiled(source: str) -> object:
    """The code object of a generated `__init__` source: from the cache, else compiled (and the
    cache written at exit)."""
    global _cache, _compiled_anew
    if _cache is None:
        _cache = _load_cache()
    code = _cache.get(source)
    if code is None:
        code = _cache[source] = compile(source, "<record __init__>", "exec")
        if not _compiled_anew:
            _compiled_anew = True
            import atexit

            atexit.register(_save_cache)
    _used.add(source)
    return code


class FrozenRecordError(AttributeError):
    """Assignment to a field of a frozen record."""


class _Field:
    __slots__ = ("default", "factory", "repr")

    def __init__(self, default: object, factory: object, repr: bool) -> None:
        self.default, self.factory, self.repr = default, factory, repr


def field(*, default: object = _MISSING, default_factory: object = _MISSING, repr: bool = True) -> object:
    """A field with a default factory (a fresh list per record) or hidden from repr."""
    return _Field(default, default_factory, repr)


def _repr(self: object) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__record_repr__)
    return f"{type(self).__qualname__}({shown})"


def _values(self: object) -> tuple:
    return tuple(getattr(self, name) for name in type(self).__record_fields__)


def _eq(self: object, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: object) -> int:
    return hash(_values(self))


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _setstate(self: object, state: tuple) -> None:
    for name, value in zip(type(self).__record_fields__, state, strict=True):
        object.__setattr__(self, name, value)


def _build(cls: type, frozen: bool, slots: bool) -> type:
    names = [name for name in cls.__dict__.get("__annotations__", {}) if not name.startswith("__")]
    params, body, scope = [], [], {"_MISSING": _MISSING}
    shown = []
    for name in names:
        spec = cls.__dict__.get(name, _MISSING)
        spec = spec if isinstance(spec, _Field) else _Field(spec, _MISSING, True)
        if spec.repr:
            shown.append(name)
        if spec.factory is not _MISSING:
            scope[f"_factory_{name}"] = spec.factory
            params.append(f"{name}=_MISSING")
            value = f"_factory_{name}() if {name} is _MISSING else {name}"
        elif spec.default is not _MISSING:
            scope[f"_default_{name}"] = spec.default
            params.append(f"{name}=_default_{name}")
            value = name
        else:
            params.append(name)
            value = name
        if not frozen:
            body.append(f"self.{name} = {value}")
        elif slots:  # the slot's own setter: 3-4x cheaper than object.__setattr__ (code.json rows)
            body.append(f"_set_{name}(self, {value})")
        else:
            body.append(f"_set(self, {name!r}, {value})")
    if "__post_init__" in cls.__dict__:
        body.append("self.__post_init__()")
    namespace = {key: value for key, value in cls.__dict__.items()
                 if key not in ("__dict__", "__weakref__")
                 and not (key in names and (slots or isinstance(value, _Field)))}
    if slots:
        namespace["__slots__"] = tuple(names)
    namespace.update(__repr__=_repr, __eq__=_eq, __record_fields__=tuple(names),
                     __record_repr__=tuple(shown), __match_args__=tuple(names))
    if frozen:
        namespace.update(__hash__=_hash, __setattr__=_frozen_setattr, __delattr__=_frozen_setattr)
        if slots:  # pickle (a child process) restores the fields past the frozen __setattr__
            namespace.update(__getstate__=_values, __setstate__=_setstate)
    else:
        namespace["__hash__"] = None
    built = type(cls)(cls.__name__, cls.__bases__, namespace)
    scope["_set"] = object.__setattr__
    if frozen and slots:
        scope.update({f"_set_{name}": built.__dict__[name].__set__ for name in names})
    source = f"def __init__(self, {', '.join(params)}):\n    " + ("\n    ".join(body) or "pass")
    exec(_compiled(source), scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    type.__setattr__(built, "__init__", init)
    return built


def record(cls: type | None = None, *, frozen: bool = False, slots: bool = False):
    """Class decorator: `@record` or `@record(frozen=True, slots=True)` (see the module docstring)."""
    if cls is None:
        return lambda inner: _build(inner, frozen, slots)
    return _build(cls, frozen, slots)
