"""JSON Schema checks against the project's schemas in `schemas/` (the agents' checks call it: pi's session
schemas are used by `adapters/pi/schema.py`; the usage export's documents `report --by request`).

The schema files live in the repository's top-level `schemas/` folder; `batchcompact/schemas` is a
directory symlink to it, so they ship inside the package as package data and load the same way from a
checkout, an editable install or a wheel.

Speed: jsonschema's validators cost about 0.5 ms per entry (10 to 25 times the reading), because every
keyword on every node goes through its generic dispatch. So each schema is also compiled here into
plain Python predicates (`_FastCompiler`), for the small keyword subset our schemas use; a schema with
any other keyword is refused at compile time, never silently half-checked. The predicate answers "valid?"
for every line; only for the rare invalid line does jsonschema's Draft202012Validator (compiled once)
run, to produce its error messages. Tests check that the two agree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import cache, cached_property
from importlib import resources
from typing import TYPE_CHECKING, cast
from urllib.parse import urldefrag, urljoin

from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.errors import BatchCompactError

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

Check = Callable[[JsonValue], bool]


@cache
def load_schema(name: str) -> JsonObject:
    """One schema file from the package's `schemas` folder, parsed (cached; do not mutate)."""
    text = resources.files("batchcompact").joinpath("schemas", name).read_text(encoding="utf-8")
    return json.loads(text)


@cache
def schema_files() -> tuple[str, ...]:
    """The names of every schema file in the package's `schemas` folder, sorted."""
    folder = resources.files("batchcompact").joinpath("schemas")
    return tuple(sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".schema.json")))


@cache
def _documents() -> dict[str, JsonObject]:
    """Every schema file by its `$id` (what a `$ref` resolves against)."""
    return {load_schema(name)["$id"]: load_schema(name) for name in schema_files()}


@cache
def _registry() -> Registry:
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    return Registry().with_resources(
        (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
        for uri, doc in _documents().items()
    )


class SchemaCompileError(BatchCompactError):
    """A schema in schemas/ uses a keyword the fast checker does not implement.

    Raised when the schemas are loaded, so an edit to schemas/ can never be half-checked silently.
    """


class _Checker:
    """One schema, checked fast (`is_valid`) and explained by jsonschema (`errors`) when it fails."""

    def __init__(self, schema: JsonObject, base: str) -> None:
        self.schema = schema
        self.is_valid = _FastCompiler().compile(schema, base)

    @cached_property
    def validator(self) -> Draft202012Validator:
        """jsonschema's validator, built (and jsonschema imported) only when a line is invalid."""
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.schema, registry=_registry())

    def errors(self, obj: JsonValue, root: str) -> list[str]:
        try:
            if self.is_valid(obj):
                return []
            errors = sorted(
                self.validator.iter_errors(obj),
                key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
            )
            return list(dict.fromkeys(_describe(e, root) for e in errors))
        except RecursionError:  # a value nested deeper than the checkers recurse (a file's [[[[...]]]])
            return [f"{root}: nested too deeply to check (more levels than Python's recursion limit)"]


@cache
def file_checker(name: str) -> _Checker:
    """The checker of one schema file (compiled once): `is_valid(obj)`, `errors(obj, root)`."""
    schema = load_schema(name)
    return _Checker(schema, schema["$id"])


@cache
def definition_checker(name: str, definition: str) -> _Checker:
    """The checker of one `$defs` entry of a schema file (compiled once)."""
    ref = f"{load_schema(name)['$id']}#/$defs/{definition}"
    return _Checker({"$ref": ref}, ref)


# --- messages -----------------------------------------------------------------------------------------


def _path(parts: Iterable[object]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(error: ValidationError, root: str) -> str:
    """'field.path: what is wrong', naming the missing field for `required` errors."""
    parts = list(error.absolute_path)
    kind = error.validator
    if kind == "required" and isinstance(error.instance, dict):
        # jsonschema yields one error per missing property; its message starts with that name's repr.
        required = cast("list[str]", error.validator_value)  # a `required` error's: the property names
        missing = next((p for p in required if error.message.startswith(repr(p))), None)
        if missing is not None:
            return f"{_path((*parts, missing))}: missing required property"
    where = _path(parts) or root
    if kind == "type":
        expected = error.validator_value
        names = ", ".join(repr(t) for t in expected) if isinstance(expected, list) else repr(expected)
        return f"{where}: {_short(error.instance)} is not of type {names}"
    if kind == "enum":
        return f"{where}: {_short(error.instance)} is not one of {error.validator_value!r}"
    if kind == "const":
        return f"{where}: {_short(error.instance)} is not {error.validator_value!r}"
    if kind == "pattern":
        return f"{where}: {_short(error.instance)} does not match {error.validator_value!r}"
    message = error.message
    return f"{where}: {message if len(message) <= 200 else message[:197] + '...'}"


# --- the fast predicate compiler ------------------------------------------------------------------------

# Keywords that never affect validity (additionalProperties is always true in our schemas).
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "examples", "default"}
)
_TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "number": lambda x: isinstance(x, int | float) and not isinstance(x, bool),
    "integer": lambda x: (
        (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer())
    ),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
}


def _same(a: JsonValue, b: JsonValue) -> bool:
    """JSON equality for the scalar values our const/enum use (True is not 1, as in jsonschema)."""
    return type(a) is type(b) and a == b if isinstance(b, bool | str) or b is None else a == b


class _FastCompiler:
    """Compile a schema (subset of draft 2020-12) into a predicate `instance -> bool`."""

    def __init__(self) -> None:
        self._by_ref: dict[str, Check] = {}

    def compile(self, schema: JsonValue, base: str) -> Check:
        if schema is True or schema == {}:
            return lambda x: True
        if schema is False:
            return lambda x: False
        unknown = set(schema) - _ANNOTATIONS - _KEYWORDS.keys()
        if unknown or schema.get("additionalProperties", True) is not True:
            raise SchemaCompileError(
                f"fast schema check does not support {sorted(unknown) or 'additionalProperties'}; "
                "extend _KEYWORDS in batchcompact/schemas.py before using it in schemas/"
            )
        compiled = [_KEYWORDS[key](self, schema, base) for key in schema if key in _KEYWORDS]
        checks = [c for c in compiled if c is not None]
        if len(checks) == 1:
            return checks[0]

        def all_of(x: JsonValue) -> bool:
            for check in checks:
                if not check(x):
                    return False
            return True

        return all_of

    def ref(self, schema: JsonObject, base: str) -> Check:
        uri = urljoin(base, schema["$ref"])
        if uri not in self._by_ref:
            self._by_ref[uri] = lambda x: self._by_ref[uri](x)  # placeholder for recursive refs
            document_uri, fragment = urldefrag(uri)
            target: JsonValue = _documents()[document_uri]
            for part in filter(None, fragment.split("/")):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            self._by_ref[uri] = self.compile(target, document_uri)
        return self._by_ref[uri]


def _k_type(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    names = s["type"] if isinstance(s["type"], list) else [s["type"]]
    tests = [_TYPES[name] for name in names]
    return tests[0] if len(tests) == 1 else (lambda x: any(t(x) for t in tests))


def _k_required(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    names = frozenset(s["required"])
    return lambda x: not isinstance(x, dict) or x.keys() >= names


def _k_properties(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    props = [(name, c.compile(sub, base)) for name, sub in s["properties"].items() if sub not in (True, {})]

    def check(x: JsonValue) -> bool:
        if isinstance(x, dict):
            for name, sub in props:
                if name in x and not sub(x[name]):
                    return False
        return True

    return check


def _k_items(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    sub = c.compile(s["items"], base)

    def check(x: JsonValue) -> bool:
        if isinstance(x, list):
            for item in x:
                if not sub(item):
                    return False
        return True

    return check


def _k_all_of(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    subs = [c.compile(sub, base) for sub in s["allOf"]]
    if len(subs) == 1:
        return subs[0]

    def check(x: JsonValue) -> bool:
        for sub in subs:
            if not sub(x):
                return False
        return True

    return check


def _k_if(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    cond = c.compile(s["if"], base)
    then = c.compile(s.get("then", True), base)
    other = c.compile(s.get("else", True), base)
    return lambda x: then(x) if cond(x) else other(x)


def _k_not(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    sub = c.compile(s["not"], base)
    return lambda x: not sub(x)


def _k_const(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    value = s["const"]
    if isinstance(value, str):
        return lambda x: x == value and isinstance(x, str)
    return lambda x: _same(x, value)


def _k_enum(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    values = s["enum"]
    if all(isinstance(v, str) for v in values):
        allowed = frozenset(values)
        return lambda x: isinstance(x, str) and x in allowed
    return lambda x: any(_same(x, v) for v in values)


def _k_pattern(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    search = re.compile(s["pattern"]).search
    return lambda x: not isinstance(x, str) or search(x) is not None


def _k_min_length(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    n = s["minLength"]
    return lambda x: not isinstance(x, str) or len(x) >= n


def _k_minimum(c: _FastCompiler, s: JsonObject, base: str) -> Check:
    n = s["minimum"]
    return lambda x: isinstance(x, bool) or not isinstance(x, int | float) or x >= n


_KEYWORDS: dict[str, Callable[[_FastCompiler, JsonObject, str], Check | None]] = {
    "$ref": lambda c, s, base: c.ref(s, base),
    "type": _k_type,
    "required": _k_required,
    "properties": _k_properties,
    "items": _k_items,
    "allOf": _k_all_of,
    "if": _k_if,
    "then": lambda c, s, base: None,  # handled by "if"; without "if" they are ignored, as in the spec
    "else": lambda c, s, base: None,
    "not": _k_not,
    "const": _k_const,
    "enum": _k_enum,
    "pattern": _k_pattern,
    "minLength": _k_min_length,
    "minimum": _k_minimum,
    "additionalProperties": lambda c, s, base: None,  # only `true` is accepted (checked in compile)
}
