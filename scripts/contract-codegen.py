#!/usr/bin/env python3
"""Generates the C++ side of the contract with the Python front end from schemas/*.schema.json:
for each schema NAME, OUTDIR/NAME.h holds its structs (one per object with properties), a reader
that checks every field against the schema and names the field on a mismatch, a writer, the
schema's version and the sha256 of the schema file (which the Python package computes from the
file it loads: tests/contract checks both agree). OUTDIR/contracts.h lists every schema.

  scripts/contract-codegen.py SCHEMA_DIR OUTDIR

The schemas use a small subset of JSON Schema (type, properties, required, additionalProperties,
items, enum, const, minimum, minLength, minItems, maxItems, title, description, and default: a
scalar's default is its C++ member's initial value, so a struct the command line fills starts from
the documented defaults); anything else is refused here so that neither side reads what the other
does not check. Python 3 standard library only."""
import hashlib
import json
import os
import sys

KEYWORDS = {"$schema", "title", "description", "type", "properties", "required", "additionalProperties", "items",
            "enum", "const", "minimum", "minLength", "minItems", "maxItems", "default"}
# JSON names that are C++ keywords get a trailing underscore as members ("class" -> class_).
CPP_KEYWORDS = {"case", "class", "default", "delete", "namespace", "new", "operator", "private", "public", "register",
                "struct", "switch", "template", "this", "throw", "try", "typename", "union", "using", "virtual"}
SCALARS = {"string": "std::string", "integer": "int64_t", "number": "double", "boolean": "bool"}


def camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_"))


def check_keywords(node, where):
    unknown = sorted(set(node) - KEYWORDS)
    if unknown:
        sys.exit(f"contract-codegen: {where}: '{unknown[0]}' is not in the schema subset the generator reads")


class Generator:
    """Walks one schema, collecting struct definitions (innermost first) and reader/writer code."""

    def __init__(self, name):
        self.name = name
        self.structs = []  # C++ text of each struct, in dependency order
        self.readers = []
        self.writers = []
        self.defined = set()

    def kind(self, node):
        """(type, nullable) of a node: type is one JSON type or "" for any."""
        types = node.get("type", "")
        if isinstance(types, list):
            rest = [t for t in types if t != "null"]
            if len(rest) != 1 or len(types) != 2:
                sys.exit(f"contract-codegen: {self.name}: only [TYPE, \"null\"] type lists are supported")
            return rest[0], True
        return types, False

    def is_struct(self, node):
        return self.kind(node)[0] == "object" and "properties" in node

    def cpp_type(self, node, hint):
        """The C++ type of a value of `node`; defines its struct when it has one."""
        inner = self.value_type(node, hint)
        return f"std::optional<{inner}>" if self.kind(node)[1] else inner

    def value_type(self, node, hint):
        """cpp_type, null aside."""
        check_keywords(node, f"{self.name}: {hint}")
        kind, _ = self.kind(node)
        if self.is_struct(node):
            inner = self.struct(node, node.get("title", hint))
        elif kind in SCALARS:
            inner = SCALARS[kind]
        elif kind == "array" and "items" in node:
            inner = f"std::vector<{self.cpp_type(node['items'], hint + 'Item')}>"
        elif kind == "object" and isinstance(node.get("additionalProperties"), dict):
            inner = f"std::map<std::string, {self.cpp_type(node['additionalProperties'], hint + 'Value')}>"
        else:
            inner = "nlohmann::json"
        return inner

    def read_expr(self, node, hint, depth=1):
        """A C++ lambda (const json&, const std::string& field) -> Expected<T> reading `node`; its
        parameters are numbered by nesting depth so that no lambda shadows another's."""
        kind, nullable = self.kind(node)
        signature = "[&r](const nlohmann::json& v{d}, const std::string& at{d}) -> Expected<{t}> {{ {body} }}"
        if nullable:
            inner = self.read_expr(dict(node, type=kind), hint, depth + 1)
            return signature.format(d=depth, t=self.cpp_type(node, hint),
                                    body=f"return r.nullable(v{depth}, at{depth}, {inner});")
        body = self.read_body(node, kind, hint, f"v{depth}", f"at{depth}", depth)
        return signature.format(d=depth, t=self.value_type(node, hint), body=body)

    def read_body(self, node, kind, hint, v, at, depth):
        if self.is_struct(node):
            return f"return read_{node.get('title', hint)}({v}, {at}, r);"
        if kind == "string":
            check = ""
            allowed = node.get("enum", [node["const"]] if "const" in node else None)
            if allowed:
                names = ", ".join(json.dumps(a) for a in allowed)
                check = (f"if (s) {{ if (auto known = r.one_of(*s, {at}, {{{names}}}); !known) "
                         f"return std::unexpected(std::move(known).error()); }} ")
            return f"auto s = r.string({v}, {at}, {node.get('minLength', 0)}); {check}return s;"
        if kind == "integer":
            minimum = f"int64_t{{{node['minimum']}}}" if "minimum" in node else "std::nullopt"
            return f"return r.integer({v}, {at}, {minimum});"
        if kind == "number":
            minimum = f"double{{{node['minimum']}}}" if "minimum" in node else "std::nullopt"
            return f"return r.number({v}, {at}, {minimum});"
        if kind == "boolean":
            return f"return r.boolean({v}, {at});"
        if kind == "array" and "items" in node:
            bounds = f", {node.get('minItems', 0)}, {node['maxItems']}" if "maxItems" in node else (
                f", {node['minItems']}" if "minItems" in node else "")
            return f"return r.array({v}, {at}, {self.read_expr(node['items'], hint + 'Item', depth + 1)}{bounds});"
        if kind == "object" and isinstance(node.get("additionalProperties"), dict):
            items = self.read_expr(node["additionalProperties"], hint + "Value", depth + 1)
            return f"return r.map({v}, {at}, {items});"
        return f"return r.any({v}, {at}, {json.dumps(kind)});"

    def default(self, node, name):
        """The C++ initializer of a scalar's `default` ("" when it has none)."""
        if "default" not in node:
            return ""
        value, kind = node["default"], self.kind(node)[0]
        if kind == "string" and isinstance(value, str):
            return json.dumps(value)
        if kind == "boolean" and isinstance(value, bool):
            return "true" if value else "false"
        if kind in ("integer", "number") and isinstance(value, (int, float)) and not isinstance(value, bool):
            return repr(value)
        sys.exit(f"contract-codegen: {self.name}: {name}: a default must be a scalar of the field's type")

    def struct(self, node, title):
        if title in self.defined:
            return title
        self.defined.add(title)
        fields, reads, writes = [], [], []
        required = set(node.get("required", []))
        for prop, child in node["properties"].items():
            member = prop + "_" if prop in CPP_KEYWORDS else prop
            value_type = self.cpp_type(child, title + camel(prop))
            optional = prop not in required
            declared = f"std::optional<{value_type}>" if optional else value_type
            comment = f"  /// {child['description']}\n" if "description" in child else ""
            fields.append(f"{comment}  {declared} {member}{{{self.default(child, prop)}}};")
            how = "optional" if optional else "required"
            reads.append(f"  ONNXPROOF_TRY_ASSIGN(out.{member}, r.{how}(v, at, \"{prop}\", "
                         f"{self.read_expr(child, title + camel(prop))}));")
            if optional:
                writes.append(f"  if (value.{member}) out[\"{prop}\"] = contract_value(*value.{member});")
            else:
                writes.append(f"  out[\"{prop}\"] = contract_value(value.{member});")
        known = ""
        names = ", ".join(json.dumps(p) for p in node["properties"])
        if node.get("additionalProperties", True) is False:
            known = f"  ONNXPROOF_TRY(r.known_fields(v, at, {{{names}}}));\n"
        else:
            # An open object keeps the fields the schema does not type, so a document read and
            # written again loses nothing.
            fields.append("  /// The fields the schema does not type, as read; written back as they are.\n"
                          "  nlohmann::json extra = nlohmann::json::object();")
            reads.append(f"  out.extra = r.other_fields(v, {{{names}}});")
            writes.insert(0, "  for (const auto& [name, field] : value.extra.items()) out[name] = field;")
        self.structs.append(f"struct {title} {{\n" + "\n".join(fields) + "\n};\n")
        self.readers.append(
            f"inline Expected<{title}> read_{title}(const nlohmann::json& v, const std::string& at, "
            f"const ContractReader& r) {{\n  ONNXPROOF_TRY(r.object(v, at));\n{known}  {title} out;\n"
            + "\n".join(reads) + "\n  return out;\n}\n")
        self.writers.append(f"inline nlohmann::json contract_value(const {title}& value) {{\n"
                            f"  nlohmann::json out = nlohmann::json::object();\n" + "\n".join(writes)
                            + "\n  return out;\n}\n")
        return title


def version_of(schema, name):
    """(field, version) of the schema's version field: the `schema` or `contract` property's const."""
    for field in ("schema", "contract"):
        const = schema["properties"].get(field, {}).get("const")
        if const:
            return field, const
    sys.exit(f"contract-codegen: {name}: no schema or contract property with a const version")


def header(name, path):
    with open(path, "rb") as handle:
        data = handle.read()
    schema = json.loads(data)
    generator = Generator(name)
    top = generator.struct(schema, schema.get("title", camel(name) + "Document"))
    field, version = version_of(schema, name)
    required = "true" if field in schema.get("required", []) else "false"
    ident = name.replace("-", "_")
    return f"""// Generated from schemas/{name}.schema.json by scripts/contract-codegen.py; do not edit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/contract/contract_value.h"
#include "onnxproof/core/contract_reader.h"
#include "onnxproof/core/error.h"

namespace onnxproof::contract {{

/// The version a {name} document carries in its `{field}` field.
inline constexpr std::string_view k_{ident}_version = "{version}";
/// sha256 of schemas/{name}.schema.json as generated (python/onnxproof/core/contract.py computes it too).
inline constexpr std::string_view k_{ident}_schema_sha256 = "{hashlib.sha256(data).hexdigest()}";

{"".join(s + chr(10) for s in generator.structs)}{"".join(w + chr(10) for w in generator.writers)}\
{"".join(x + chr(10) for x in generator.readers)}\
/// Reads a {name} document: its version first, then every field against the schema; the error
/// (ErrorCode `code`) names `path` and the field.
inline Expected<{top}> read_{ident}(const nlohmann::json& document, const std::filesystem::path& path,
                                     ErrorCode code) {{
  const ContractReader r(path, code);
  ONNXPROOF_TRY(r.object(document, "(top level)"));
  ONNXPROOF_TRY(r.check_version(document, "{field}", k_{ident}_version, {required}));
  return read_{top}(document, "", r);
}}

/// The document as JSON, ready to write.
inline nlohmann::json write_{ident}(const {top}& document) {{ return contract_value(document); }}

}}  // namespace onnxproof::contract
"""


def main(argv):
    schema_dir, out_dir = argv[1], argv[2]
    os.makedirs(out_dir, exist_ok=True)
    names = sorted(f[:-len(".schema.json")] for f in os.listdir(schema_dir) if f.endswith(".schema.json"))
    listing = []
    for name in names:
        path = os.path.join(schema_dir, f"{name}.schema.json")
        write_if_changed(os.path.join(out_dir, f"{name}.h"), header(name, path))
        ident = name.replace("-", "_")
        listing.append(f'    {{"{name}", k_{ident}_version, k_{ident}_schema_sha256}},')
    includes = "".join(f'#include "onnxproof/contract/{name}.h"\n' for name in names)
    write_if_changed(os.path.join(out_dir, "contracts.h"), f"""// Generated by scripts/contract-codegen.py; do not edit.
#pragma once

#include <array>
#include <string_view>

{includes}
namespace onnxproof::contract {{

struct SchemaDigest {{
  std::string_view name;     // schemas/NAME.schema.json
  std::string_view version;  // the version its documents carry
  std::string_view sha256;   // of the schema file the engine was generated from
}};

/// Every schema the engine was generated from.
inline constexpr std::array<SchemaDigest, {len(names)}> k_schemas = {{{{
{chr(10).join(listing)}
}}}};

}}  // namespace onnxproof::contract
""")


def write_if_changed(path, text):
    """Leaves an unchanged header's time stamp alone, so a re-run rebuilds nothing."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    main(sys.argv)
