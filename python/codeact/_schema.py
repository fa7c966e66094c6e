"""The type-hint-to-schema step: a host tool's JSON Schema from its Python signature.

The one piece of the package that is not a binding or an adapter. Parameters become properties
(required unless they have a default); a docstring's first paragraph is the description.
"""

import dataclasses
import enum
import inspect
import types
import typing

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(hint):
    if hint is inspect.Parameter.empty or hint is typing.Any or hint is object:
        return {}
    if hint is type(None) or hint is None:
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if hasattr(hint, "model_json_schema"):  # a pydantic model, without depending on pydantic
        return hint.model_json_schema()
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object_schema(
            {f.name: f.type for f in dataclasses.fields(hint)},
            {f.name for f in dataclasses.fields(hint)
             if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING},
            typing.get_type_hints(hint))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        schema = dict(_type_schema(args[0]))
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
        return schema
    if origin in (typing.Union, types.UnionType):
        options = [_type_schema(a) for a in args]
        return {"anyOf": options}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            schema["prefixItems"] = [_type_schema(a) for a in args]
        elif args:
            schema["items"] = _type_schema(args[0])
        return schema
    if origin is dict or hint is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _type_schema(args[1])
        return schema
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        return _object_schema(hints, set(getattr(hint, "__required_keys__", hints)), hints)
    return {}


def _object_schema(fields, required, hints):
    return {
        "type": "object",
        "properties": {name: _type_schema(hints.get(name, t)) for name, t in fields.items()},
        "required": sorted(required),
    }


def description_from_callable(fn):
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n", 1)[0].strip()


def schema_from_callable(fn):
    """JSON Schema (a dict) of `fn`'s keyword arguments, from its type hints."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}
    properties, required = {}, []
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema = dict(_type_schema(hints.get(name, param.annotation)))
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif _json_safe(param.default):
            schema["default"] = param.default
        properties[name] = schema
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _json_safe(value):
    return value is None or isinstance(value, (str, int, float, bool))
