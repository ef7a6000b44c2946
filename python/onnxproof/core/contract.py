"""The written contract between the C++ engine and this front end (ARCHITECTURE.md, "The Python
boundary"). Each document is described once, by a JSON Schema in schemas/NAME.schema.json: the
engine's readers and writers are generated from those files at build time
(scripts/contract-codegen.py), and this module validates against the same files at run time: the
configuration the engine passes (--config-json) on arrival, export.json, cases.json and
modules.json before they are written. A mismatch is an error naming the field, never a KeyError.
digests() gives each schema's sha256, which the engine embeds (tests/contract checks both agree)."""
import functools
import hashlib
import json
import os


class ContractError(ValueError):
    pass


def schema_dir():
    """$ONNXPROOF_SCHEMAS, else the wheel's (onnxproof/_engine/share/onnxproof/schemas), else the
    one beside the package: <root>/python/onnxproof -> <root>/schemas in a checkout, and
    <prefix>/share/onnxproof/python/onnxproof -> <prefix>/share/onnxproof/schemas for cmake --install."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # onnxproof/, above core/
    beside = os.path.join(os.path.dirname(os.path.dirname(package)), "schemas")
    for folder in (os.environ.get("ONNXPROOF_SCHEMAS"), os.path.join(package, "_engine", "share", "onnxproof", "schemas"),
                   beside):
        if folder and os.path.isfile(os.path.join(folder, "config.schema.json")):
            return folder
    return beside


def _schema_path(name):
    return os.path.join(schema_dir(), f"{name}.schema.json")


@functools.lru_cache(maxsize=None)
def schema(name):
    """schemas/NAME.schema.json as a dict."""
    with open(_schema_path(name), encoding="utf-8") as handle:
        return json.load(handle)


def digests():
    """{name: (version, sha256 of the schema file)} for every schema this package loads."""
    names = sorted(f[:-len(".schema.json")] for f in os.listdir(schema_dir()) if f.endswith(".schema.json"))
    result = {}
    for name in names:
        with open(_schema_path(name), "rb") as handle:
            result[name] = (version(name), hashlib.sha256(handle.read()).hexdigest())
    return result


def _version_field(name):
    """(field, version): the `schema` or `contract` property whose const is the document's version."""
    properties = schema(name)["properties"]
    for field in ("schema", "contract"):
        if "const" in properties.get(field, {}):
            return field, properties[field]["const"]
    raise ContractError(f"{_schema_path(name)}: no schema or contract field with a const version")


def version(name):
    return _version_field(name)[1]


CONFIG = version("config")
EXPORT = version("export")
CASES = version("cases")
LOCALIZE = version("localize")
REPORT = version("report")
GENERATION = version("generation")
COMMAND = version("command")

_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,),
          "object": (dict,), "null": (type(None),)}
_WORDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
          "array": "a list", "object": "an object", "null": "null"}


def _is(value, kind):
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def _expect(condition, field, what):
    if not condition:
        raise ContractError(f"{field}: expected {what}")


def _check_value(value, node, field):
    """Raises ContractError naming `field` when `value` breaks the schema node."""
    kinds = node.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds and not any(_is(value, kind) for kind in kinds):
        _expect(False, field, " or ".join(_WORDS[kind] for kind in kinds))
    allowed = node.get("enum", [node["const"]] if "const" in node else None)
    _expect(allowed is None or value in allowed, field, " or ".join(str(a) for a in allowed or []))
    if isinstance(value, str):
        _expect(len(value) >= node.get("minLength", 0), field, "a non-empty string")
    if _is(value, "number") and "minimum" in node:
        _expect(value >= node["minimum"], field, f"{'an integer' if _is(value, 'integer') else 'a number'} "
                                                 f">= {node['minimum']}")
    if isinstance(value, list):
        _expect(node.get("minItems", 0) <= len(value) <= node.get("maxItems", len(value)), field,
                f"a list of {node.get('minItems', 0)}" + (f" to {node['maxItems']}" if "maxItems" in node else "+"))
        for i, item in enumerate(value):
            _check_value(item, node.get("items", {}), f"{field}[{i}]")
    if isinstance(value, dict):
        _check_object(value, node, field)


def _check_object(value, node, field):
    properties = node.get("properties", {})
    missing = [key for key in node.get("required", []) if key not in value]
    _expect(not missing, f"{field}.{missing[0] if missing else ''}", "a value (the field is missing)")
    extra = node.get("additionalProperties", True)
    for key in sorted(value):
        if key in properties:
            continue
        _expect(extra is not False, f"{field}.{key}", "no such field in this document")
        if isinstance(extra, dict):
            _check_value(value[key], extra, f"{field}.{key}")
    for key, child in properties.items():
        if key in value:
            _check_value(value[key], child, f"{field}.{key}")


def validate(document, name, root=None):
    """Raises ContractError naming the first field of `document` that breaks schemas/NAME.schema.json
    (its version first: a one-line error naming the document and both versions)."""
    root = root or name
    _expect(isinstance(document, dict), root, "an object")
    field, expected = _version_field(name)
    required = field in schema(name).get("required", [])
    if field in document or required:
        found = document.get(field)
        _expect(found == expected, f"{root}.{field}",
                f"'{expected}', not {found!r} (the engine and the front end come from different onnxproof versions)")
    _check_object(document, schema(name), root)


def check_config(config):
    """Raises ContractError naming the first field that does not hold to onnxproof.config/1."""
    validate(config, "config")


def dumps(document, name, **options):
    """`document` as JSON text (json.dumps with `options`), validated against schemas/NAME.schema.json
    as the engine will read it."""
    text = json.dumps(document, **options)
    validate(json.loads(text), name)
    return text
