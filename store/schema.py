"""The record schema: each record type declares its fields once, and its wire form follows.

A record type is a frozen dataclass decorated with ``@wired`` whose fields say, through
``field(metadata=wire(...))``, how each one is written:

    form    how the value becomes msgpack and back (``VALUE`` as is, ``TUPLE`` a list read back
            as a tuple, ``nested_tuple(Cls)`` nested records, ...);
    since   the layout revision of this record type that added the field. Revision 1 fields
            are read from every record; a later field is read when the record has it, else its
            dataclass default is used (a record older builds wrote);
    omit    the field is written only when it (or a field of a later revision) is not its
            default, so records that never use it keep the bytes, and names, they always had.

The wire form is a positional list in field order: compact, and the order is the on-disk
contract. Appending a field with a new ``since`` keeps every stored record readable; anything
else (removing, reordering or changing the meaning of a field) must bump the format version of
the file holding the record: ``SCHEMA_VERSION`` for what ``store.codec`` writes (each envelope
carries it), the archive chain's and the checkpoint's own version for those files. A reader
then refuses an old file as another version instead of misreading it (for the index: `pipeline
rebuild` derives it again). ``tests/unit/store/test_schema.py`` pins every layout, so such a
change cannot slip through.

The encoder and decoder of each type are generated Python source compiled once at import (as
``dataclasses`` builds ``__init__``): decoding is on the query's hot path, and generated code
reads a record as fast as the hand-written ``cls(w[0], tuple(w[1]), ...)`` it replaces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final, Self, TypeVar

__all__ = [
    "BOOL",
    "ROWS",
    "RECORD_TYPES",
    "SCHEMA_VERSION",
    "SORTED",
    "SORTED_MAP",
    "TUPLE",
    "VALUE",
    "Form",
    "Wired",
    "layout",
    "nested",
    "nested_map",
    "nested_tuple",
    "wire",
    "wired",
]

SCHEMA_VERSION: Final = 1
"""The record format version (see the module docstring); ``store.records`` re-exports it."""

Wire = list[Any]
_Encoder = Callable[[Any], Wire]
_Decoder = Callable[[Wire], Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Form:
    """How one field's value is written: code templates around the value expression ``{v}``.

    ``nested`` is the record type whose generated functions the templates call (as ``enc``
    and ``dec``), for the forms that hold records.
    """

    name: str
    encode: str
    decode: str
    nested: type | None = None


VALUE: Final = Form("value", "{v}", "{v}")
TUPLE: Final = Form("tuple", "list({v})", "tuple({v})")
# Sorted on the way out so equal values built in another order are equal bytes.
SORTED: Final = Form("sorted", "sorted({v})", "tuple({v})")
SORTED_MAP: Final = Form("sorted_map", "dict(sorted({v}.items()))", "dict({v})")
ROWS: Final = Form("rows", "[list(x) for x in {v}]", "tuple([tuple(x) for x in {v}])")
BOOL: Final = Form("bool", "{v}", "bool({v})")


def nested(cls: type) -> Form:
    """One nested record of type *cls*."""
    return Form(f"record:{cls.__name__}", "enc({v})", "dec({v})", cls)


def nested_tuple(cls: type) -> Form:
    """A tuple of nested records of type *cls*."""
    return Form(
        f"records:{cls.__name__}", "[enc(x) for x in {v}]", "tuple([dec(x) for x in {v}])", cls
    )


def nested_map(cls: type) -> Form:
    """A dict of name -> nested record of type *cls*, written in key order."""
    return Form(
        f"record_map:{cls.__name__}",
        "{{k: enc(x) for k, x in sorted({v}.items())}}",
        "{{k: dec(x) for k, x in dict({v}).items()}}",
        cls,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Spec:
    form: Form
    since: int
    omit: bool


_KEY: Final = "sessiondex.wire"


def wire(form: Form = VALUE, *, since: int = 1, omit: bool = False) -> Mapping[str, Any]:
    """Field metadata: ``field(default=..., metadata=wire(TUPLE, since=2, omit=True))``."""
    if since < 1:
        raise ValueError(f"since counts layout revisions from 1, got {since}")
    return {_KEY: _Spec(form, since, omit)}


class Wired:
    """Base of every record type: ``to_wire`` / ``from_wire`` run the generated functions."""

    __slots__ = ()

    def to_wire(self) -> Wire:
        """The msgpack-ready positional list of this record."""
        return _ENCODERS[type(self)](self)

    @classmethod
    def from_wire(cls, w: Wire) -> Self:
        """The record *w* holds; raises IndexError/TypeError/ValueError on the wrong shape."""
        out: Self = _DECODERS[cls](w)
        return out


_ENCODERS: Final[dict[type, _Encoder]] = {}
_DECODERS: Final[dict[type, _Decoder]] = {}
RECORD_TYPES: Final[list[type[Wired]]] = []
"""Every record type, in definition order (a round-trip test walks this list)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    spec: _Spec
    default: Any
    factory: Callable[[], Any] | None

    @property
    def optional(self) -> bool:
        return self.default is not dataclasses.MISSING or self.factory is not None

    def default_value(self) -> Any:
        return self.factory() if self.factory is not None else self.default


def _fields(cls: type) -> list[_Field]:
    out = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY, _Spec(VALUE, 1, False))
        factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
        out.append(_Field(f.name, spec, f.default, factory))
    return out


def _check(cls: type, fields: list[_Field]) -> None:
    """The rules that keep every stored record readable (raised at import, not at read)."""
    since = 1
    omitting = False
    for f in fields:
        if f.spec.since < since:
            raise TypeError(f"{cls.__name__}.{f.name}: fields are in revision order")
        if f.spec.since > 1 and not f.optional:
            raise TypeError(f"{cls.__name__}.{f.name}: a later field needs a default")
        if omitting and not f.spec.omit:
            raise TypeError(f"{cls.__name__}.{f.name}: omitted fields end the record")
        if f.spec.omit and (f.spec.since == 1 or not f.optional):
            raise TypeError(
                f"{cls.__name__}.{f.name}: only a later field with a default is omitted"
            )
        since, omitting = f.spec.since, f.spec.omit


def _compile(cls: type, fields: list[_Field]) -> tuple[_Encoder, _Decoder]:
    namespace: dict[str, Any] = {"cls": cls}
    for i, f in enumerate(fields):
        nested = f.spec.form.nested
        if nested is not None:
            namespace[f"enc{i}"] = _ENCODERS[nested]
            namespace[f"dec{i}"] = _DECODERS[nested]
        namespace[f"d{i}"] = f.default_value() if f.factory is None else None
        namespace[f"f{i}"] = f.factory

    def enc(i: int, expr: str) -> str:
        return fields[i].spec.form.encode.replace("enc(", f"enc{i}(").format(v=expr)

    def dec(i: int, expr: str) -> str:
        return fields[i].spec.form.decode.replace("dec(", f"dec{i}(").format(v=expr)

    written = [i for i, f in enumerate(fields) if not f.spec.omit]
    groups: dict[int, list[int]] = {}
    for i, f in enumerate(fields):
        if f.spec.omit:
            groups.setdefault(f.spec.since, []).append(i)
    lines = ["def encode(self):"]
    items = ", ".join(enc(i, f"self.{fields[i].name}") for i in written)
    lines.append(f"    w = [{items}]")
    if groups:
        # An omitted group is written when it or any later group holds something else than
        # the defaults: positions stay fixed, so a set later field writes the earlier ones too.
        order = list(groups.values())
        lines.append("    n = 0")
        for rank in range(len(order), 0, -1):
            test = " or ".join(
                f"self.{fields[i].name} != {'f' if fields[i].factory else 'd'}{i}"
                + ("()" if fields[i].factory else "")
                for i in order[rank - 1]
            )
            lines.append(f"    {'if' if rank == len(order) else 'elif'} {test}:")
            lines.append(f"        n = {rank}")
        for rank, group in enumerate(order, start=1):
            tail = ", ".join(enc(i, f"self.{fields[i].name}") for i in group)
            lines.append(f"    if n >= {rank}:")
            lines.append(f"        w += [{tail}]")
    lines.append("    return w")

    args = []
    for i, f in enumerate(fields):
        if f.spec.since == 1:
            args.append(dec(i, f"w[{i}]"))
        else:
            absent = f"f{i}()" if f.factory else f"d{i}"
            args.append(f"({dec(i, f'w[{i}]')} if n > {i} else {absent})")
    lines.append("def decode(w):")
    if any(f.spec.since > 1 for f in fields):
        lines.append("    n = len(w)")
    lines.append(f"    return cls({', '.join(args)})")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<wire {cls.__name__}>", "exec"), namespace)  # noqa: S102
    return namespace["encode"], namespace["decode"]


T = TypeVar("T", bound=type[Wired])


def wired(cls: T) -> T:
    """Register record type *cls* and generate its encoder and decoder from its fields."""
    if not dataclasses.is_dataclass(cls) or not issubclass(cls, Wired):
        raise TypeError(f"{cls.__name__}: a record type is a dataclass deriving from Wired")
    fields = _fields(cls)
    _check(cls, fields)
    _ENCODERS[cls], _DECODERS[cls] = _compile(cls, fields)
    RECORD_TYPES.append(cls)
    return cls


def layout(cls: type[Wired]) -> list[tuple[str, str, int, bool]]:
    """(name, form, since, omit) of every field of *cls*, in wire order: the on-disk contract."""
    return [(f.name, f.spec.form.name, f.spec.since, f.spec.omit) for f in _fields(cls)]
