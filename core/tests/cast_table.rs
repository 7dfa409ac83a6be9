//! Table-driven tests for `opkit::schema::cast` (TypeBox `Value.Cast` semantics over JSON
//! Schema 2020-12), plus casts against real schemars output.

use std::collections::{BTreeSet, HashMap};

use opkit::schema::{CAST_MAX_DEPTH, cast, schema_for};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `(name, schema, input, expected)`.
type Case = (&'static str, Value, Value, Value);

fn object_cases() -> Vec<Case> {
    vec![
        (
            "object keeps declared properties and drops undeclared ones",
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!({"a": "x", "b": 1}),
            json!({"a": "x"}),
        ),
        (
            "object fills a missing required property from its default",
            json!({"type": "object", "properties": {"a": {"type": "integer", "default": 5}}, "required": ["a"]}),
            json!({}),
            json!({"a": 5}),
        ),
        (
            "object leaves a missing optional property missing, even with a default",
            json!({"type": "object", "properties": {
                "a": {"type": "string"}, "b": {"type": "string", "default": "d"}}, "required": ["a"]}),
            json!({"a": "x"}),
            json!({"a": "x"}),
        ),
        (
            "object creates missing required properties by type",
            json!({"type": "object", "required": ["s", "n", "i", "b", "arr", "obj", "nul", "opt"],
                "properties": {
                    "s": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"},
                    "b": {"type": "boolean"}, "arr": {"type": "array"},
                    "obj": {"type": "object", "properties": {"x": {"type": "string"}}},
                    "nul": {"type": "null"}, "opt": {"type": ["string", "null"]}}}),
            json!({}),
            json!({"s": "", "n": 0, "i": 0, "b": false, "arr": [], "obj": {}, "nul": null, "opt": null}),
        ),
        (
            "object replaces a non-object value by a created object",
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}),
            json!("junk"),
            json!({"a": ""}),
        ),
        (
            "object is inferred from properties when type is absent",
            json!({"properties": {"a": {"type": "integer"}}}),
            json!({"a": "x", "b": 1}),
            json!({"a": 0}),
        ),
        (
            "nested objects are cast recursively",
            json!({"type": "object", "required": ["outer"], "properties": {"outer": {
                "type": "object", "required": ["inner", "n"], "properties": {
                    "n": {"type": "integer"},
                    "inner": {"type": "object", "required": ["flag"], "properties": {"flag": {"type": "boolean"}}}}}}}),
            json!({"outer": {"inner": {"flag": "yes", "noise": 1}, "noise": 2}, "noise": 3}),
            json!({"outer": {"inner": {"flag": false}, "n": 0}}),
        ),
        (
            "additionalProperties true keeps undeclared properties as they are",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true}),
            json!({"a": "1", "b": [1, {"c": null}]}),
            json!({"a": 0, "b": [1, {"c": null}]}),
        ),
        (
            "additionalProperties schema keeps undeclared properties and casts them",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}),
            json!({"a": "x", "b": 2, "c": "no", "d": 4.0}),
            json!({"a": "x", "b": 2, "c": 0, "d": 4}),
        ),
        (
            "additionalProperties false drops undeclared properties",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
            json!({"a": "x", "b": 2}),
            json!({"a": "x"}),
        ),
        (
            "a map type keeps its entries and casts each",
            json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}),
            json!({"x": 1, "y": 2.0, "z": "s", "w": -4}),
            json!({"x": 1, "y": 2, "z": 0, "w": -4}),
        ),
        (
            "patternProperties keeps matching keys and casts them",
            json!({"type": "object", "properties": {"id": {"type": "integer"}},
                "patternProperties": {"^x-": {"type": "string"}}}),
            json!({"id": 1, "x-a": 5, "x-b": "s", "other": 1}),
            json!({"id": 1, "x-a": "", "x-b": "s"}),
        ),
        (
            "unevaluatedProperties schema is read like additionalProperties",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": {"type": "boolean"}}),
            json!({"a": "x", "b": true, "c": 1}),
            json!({"a": "x", "b": true, "c": false}),
        ),
        (
            "an allOf member forbidding extras wins over one allowing them",
            json!({"allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true},
                {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": false}]}),
            json!({"a": "x", "b": "y", "c": 1}),
            json!({"a": "x", "b": "y"}),
        ),
        (
            "a bare object type is a free-form object: every entry is kept",
            json!({"type": "object"}),
            json!({"a": 1, "b": [true]}),
            json!({"a": 1, "b": [true]}),
        ),
        (
            "an object with declared properties drops the undeclared ones",
            json!({"type": "object", "properties": {}}),
            json!({"a": 1}),
            json!({}),
        ),
        (
            "a required but undeclared property counts as declared",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}),
            json!({"a": "x", "b": [1], "c": 1}),
            json!({"a": "x", "b": [1]}),
        ),
        (
            "a nullable object keeps null and walks objects",
            json!({"type": ["object", "null"], "properties": {"a": {"type": "string"}}}),
            json!({"a": "x", "b": 1}),
            json!({"a": "x"}),
        ),
    ]
}

fn array_cases() -> Vec<Case> {
    vec![
        (
            "array items are cast to items",
            json!({"type": "array", "items": {"type": "integer"}}),
            json!([1, "2", 3.0, 4.5, null]),
            json!([1, 0, 3, 0, 0]),
        ),
        (
            "a non-array value becomes an empty array",
            json!({"type": "array", "items": {"type": "integer"}}),
            json!({"a": 1}),
            json!([]),
        ),
        (
            "array is inferred from items when type is absent",
            json!({"items": {"type": "string"}}),
            json!(["a", 1]),
            json!(["a", ""]),
        ),
        (
            "prefixItems cast position-wise, later items unconstrained without items",
            json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}),
            json!(["1", 2, true]),
            json!([0, "", true]),
        ),
        (
            "prefixItems with items false drops the rest",
            json!({"type": "array", "prefixItems": [{"type": "integer"}], "items": false}),
            json!([1, 2, 3]),
            json!([1]),
        ),
        (
            "prefixItems with an items schema casts the rest to it",
            json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"}}),
            json!(["a", true, 1]),
            json!(["a", true, false]),
        ),
        (
            "the pre-2020 tuple form (items array, additionalItems) is honoured",
            json!({"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "additionalItems": false}),
            json!([1, "a", "b"]),
            json!([1, "a"]),
        ),
        (
            "maxItems truncates",
            json!({"type": "array", "maxItems": 2}),
            json!([1, 2, 3, 4]),
            json!([1, 2]),
        ),
        (
            "minItems pads with created items",
            json!({"type": "array", "items": {"type": "string", "default": "x"}, "minItems": 3}),
            json!(["a"]),
            json!(["a", "x", "x"]),
        ),
        (
            "minItems pads a tuple position-wise",
            json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}),
            json!([7]),
            json!([7, ""]),
        ),
        (
            "uniqueItems removes later duplicates by JSON equality",
            json!({"type": "array", "uniqueItems": true}),
            json!([1, 1.0, "a", {"x": 1, "y": 2}, {"y": 2, "x": 1}, [1], [1.0], 2, "a"]),
            json!([1, "a", {"x": 1, "y": 2}, [1], 2]),
        ),
        (
            "uniqueItems applies after items are cast",
            json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
            json!(["a", 1, 2, "a", ""]),
            json!(["a", ""]),
        ),
        (
            "a valid uniqueItems array whose items become equal once undeclared keys go is kept",
            json!({"type": "array", "uniqueItems": true, "items": {"type": "object", "required": ["a"],
                "properties": {"a": {"type": "integer"}}}}),
            json!([{"a": 1, "z": 1}, {"a": 1}]),
            json!([{"a": 1, "z": 1}, {"a": 1}]),
        ),
        (
            "a valid uniqueItems array is neither deduplicated nor padded up to minItems",
            json!({"type": "array", "uniqueItems": true, "minItems": 2, "items": {"type": "object",
                "required": ["b"], "properties": {"b": {"type": "integer", "minimum": 3}}}}),
            json!([{"b": 7}, {"b": 7, "x": 1}]),
            json!([{"b": 7}, {"b": 7, "x": 1}]),
        ),
        (
            "an invalid uniqueItems array is deduplicated after its items are cast, then padded",
            json!({"type": "array", "uniqueItems": true, "minItems": 2, "items": {"type": "object",
                "required": ["b"], "properties": {"b": {"type": "integer", "minimum": 3}}}}),
            json!([{"b": 7}, {"b": 7, "x": 1}, {"b": "seven"}]),
            json!([{"b": 7}, {"b": 3}]),
        ),
        (
            "a required array is created with minItems created items",
            json!({"type": "object", "required": ["xs"], "properties": {
                "xs": {"type": "array", "minItems": 2, "items": {"type": "integer", "minimum": 3}}}}),
            json!({}),
            json!({"xs": [3, 3]}),
        ),
    ]
}

fn primitive_cases() -> Vec<Case> {
    vec![
        (
            "a value of an allowed type is kept",
            json!({"type": "string"}),
            json!("hello"),
            json!("hello"),
        ),
        (
            "string constraint failures are kept (validation reports them)",
            json!({"type": "string", "minLength": 5, "pattern": "^a", "format": "email"}),
            json!("b"),
            json!("b"),
        ),
        (
            "number constraint failures are kept",
            json!({"type": "integer", "minimum": 10, "multipleOf": 7}),
            json!(3),
            json!(3),
        ),
        (
            "integer accepts an integral float and rewrites it as an integer",
            json!({"type": "integer"}),
            json!(3.0),
            json!(3),
        ),
        (
            "integer rejects a fraction: created from minimum, rounded up",
            json!({"type": "integer", "minimum": 1.5}),
            json!(3.5),
            json!(2),
        ),
        (
            "integer accepts a huge integral float as it is",
            json!({"type": "integer"}),
            json!(1e300),
            json!(1e300),
        ),
        (
            "number accepts integers",
            json!({"type": "number"}),
            json!(3),
            json!(3),
        ),
        (
            "number keeps an integral float as it is",
            json!({"type": "number"}),
            json!(3.0),
            json!(3.0),
        ),
        (
            "integer exclusiveMinimum creates the next integer",
            json!({"type": "integer", "exclusiveMinimum": 5}),
            json!("x"),
            json!(6),
        ),
        (
            "number minimum is created as is",
            json!({"type": "number", "minimum": 0.5}),
            json!(null),
            json!(0.5),
        ),
        (
            "number below a negative maximum is created from the maximum",
            json!({"type": "integer", "maximum": -3}),
            json!("x"),
            json!(-3),
        ),
        (
            "boolean mismatch becomes false",
            json!({"type": "boolean"}),
            json!("true"),
            json!(false),
        ),
        (
            "null type makes null",
            json!({"type": "null"}),
            json!(1),
            json!(null),
        ),
        (
            "a nullable type replaces a mismatch by null",
            json!({"type": ["string", "null"]}),
            json!(5),
            json!(null),
        ),
        (
            "a nullable type keeps an allowed value",
            json!({"type": ["string", "null"]}),
            json!("a"),
            json!("a"),
        ),
        (
            "a type list creates the first listed type",
            json!({"type": ["integer", "string"]}),
            json!(true),
            json!(0),
        ),
        (
            "default replaces a mismatching value",
            json!({"type": "string", "default": "d"}),
            json!(1),
            json!("d"),
        ),
        (
            "default wins over null for a nullable type",
            json!({"type": ["string", "null"], "default": "d"}),
            json!(1),
            json!("d"),
        ),
        (
            "const replaces any other value",
            json!({"const": "x"}),
            json!("y"),
            json!("x"),
        ),
        (
            "const keeps an equal value (1.0 equals 1)",
            json!({"const": 1}),
            json!(1.0),
            json!(1.0),
        ),
        (
            "enum keeps a member",
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("b"),
            json!("b"),
        ),
        (
            "enum replaces a non-member by the first member",
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("c"),
            json!("a"),
        ),
        (
            "enum replaces a non-member by the default when there is one",
            json!({"enum": ["a", "b"], "default": "b"}),
            json!(3),
            json!("b"),
        ),
    ]
}

fn reference_cases() -> Vec<Case> {
    vec![
        (
            "$ref into $defs",
            json!({"$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
                "type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "required": ["p"]}),
            json!({"p": {"x": "1", "y": 2}}),
            json!({"p": {"x": 0}}),
        ),
        (
            "$ref into definitions",
            json!({"definitions": {"S": {"type": "string"}}, "type": "array", "items": {"$ref": "#/definitions/S"}}),
            json!(["a", 1]),
            json!(["a", ""]),
        ),
        (
            "$ref pointer tokens are unescaped (~1, ~0) and percent-decoded",
            json!({"$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}, "e%f": {"type": "boolean"}},
                "type": "object", "properties": {
                    "x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}, "z": {"$ref": "#/$defs/e%25f"}}}),
            json!({"x": "1", "y": 1, "z": 1}),
            json!({"x": 0, "y": "", "z": false}),
        ),
        (
            "$ref with a default sibling creates from the sibling default",
            json!({"$defs": {"D": {"type": "object", "properties": {"a": {"type": "integer"}}}},
                "type": "object", "required": ["d", "e"], "properties": {
                    "d": {"$ref": "#/$defs/D", "default": {"a": 7}},
                    "e": {"$ref": "#/$defs/D", "default": {"a": 8}}}}),
            json!({"d": "junk"}),
            json!({"d": {"a": 7}, "e": {"a": 8}}),
        ),
        (
            "$ref with sibling properties merges both",
            json!({"$defs": {"B": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
                "$ref": "#/$defs/B", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            json!({"id": 1, "name": 2, "other": 3}),
            json!({"id": 1, "name": ""}),
        ),
        (
            "a remote $ref leaves the value alone",
            json!({"type": "object", "properties": {"r": {"$ref": "https://example.com/s.json#/x"}}}),
            json!({"r": {"anything": [1]}}),
            json!({"r": {"anything": [1]}}),
        ),
        (
            "a $ref to the root ($ref: #) recurses",
            json!({"type": "object", "required": ["children"], "properties": {
                "children": {"type": "array", "items": {"$ref": "#"}},
                "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}}),
            json!({"children": [{"children": [], "x": 1}, {"next": {"children": "no"}}], "next": null}),
            json!({"children": [{"children": []}, {"children": [], "next": {"children": []}}], "next": null}),
        ),
        (
            "a $ref through the root $id resolves locally",
            json!({"$id": "https://example.com/root.json", "$defs": {"N": {"type": "integer"}},
                "type": "array", "items": {"$ref": "https://example.com/root.json#/$defs/N"}}),
            json!([1, "x"]),
            json!([1, 0]),
        ),
    ]
}

fn union_cases() -> Vec<Case> {
    let option_of_p = json!({
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "string"}}, "required": ["x"]}},
        "anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]
    });
    let externally_tagged = json!({"oneOf": [
        {"type": "string", "enum": ["Empty"]},
        {"type": "object", "additionalProperties": false, "required": ["Circle"],
            "properties": {"Circle": {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]}}},
        {"type": "object", "additionalProperties": false, "required": ["Square"],
            "properties": {"Square": {"type": "number"}}}
    ]});
    let internally_tagged = json!({"oneOf": [
        {"type": "object", "properties": {"kind": {"type": "string", "const": "A"}, "v": {"type": "integer"}}, "required": ["kind", "v"]},
        {"type": "object", "properties": {"kind": {"type": "string", "const": "B"}}, "required": ["kind"]}
    ]});
    vec![
        (
            "anyOf nullable option keeps null",
            option_of_p.clone(),
            json!(null),
            json!(null),
        ),
        (
            "anyOf nullable option casts a resembling object to the object branch",
            option_of_p.clone(),
            json!({"x": "1", "z": 2}),
            json!({"x": 0}),
        ),
        (
            "anyOf nullable option turns a value resembling nothing into null",
            option_of_p.clone(),
            json!(5),
            json!(null),
        ),
        (
            "anyOf keeps a fitting object and drops its extra properties",
            option_of_p,
            json!({"x": 1, "y": "s", "z": 2}),
            json!({"x": 1, "y": "s"}),
        ),
        (
            "oneOf externally tagged enum keeps a unit variant",
            externally_tagged.clone(),
            json!("Empty"),
            json!("Empty"),
        ),
        (
            "oneOf externally tagged enum replaces an unknown unit variant",
            externally_tagged.clone(),
            json!("Triangle"),
            json!("Empty"),
        ),
        (
            "oneOf externally tagged enum repairs a data variant",
            externally_tagged.clone(),
            json!({"Circle": {"r": "5", "noise": 1}, "junk": 1}),
            json!({"Circle": {"r": 0}}),
        ),
        (
            "oneOf scoring prefers the variant whose property fits",
            externally_tagged.clone(),
            json!({"Circle": {"r": "big"}, "Square": 1}),
            json!({"Square": 1}),
        ),
        (
            "oneOf externally tagged enum keeps a fitting data variant",
            externally_tagged,
            json!({"Square": 2.5}),
            json!({"Square": 2.5}),
        ),
        (
            "oneOf internally tagged enum selects by the const discriminator",
            internally_tagged.clone(),
            json!({"kind": "B", "v": 3}),
            json!({"kind": "B"}),
        ),
        (
            "oneOf internally tagged enum repairs the variant the discriminator names",
            internally_tagged,
            json!({"kind": "A", "v": "x"}),
            json!({"kind": "A", "v": 0}),
        ),
        (
            "anyOf picks the first branch of the right type",
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!("s"),
            json!("s"),
        ),
        (
            "anyOf with no resembling branch creates the first branch",
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!(2.5),
            json!(0),
        ),
        (
            "anyOf tells arrays apart by their items",
            json!({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "array", "items": {"type": "integer"}}]}),
            json!([1, 2]),
            json!([1, 2]),
        ),
        (
            "anyOf with a default uses it when nothing resembles the value",
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "default": "d"}),
            json!([]),
            json!("d"),
        ),
        (
            "a parent object and its oneOf branch are merged (flattened enum)",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                "oneOf": [
                    {"type": "object", "properties": {"t": {"type": "string", "const": "A"}, "c": {"type": "integer"}}, "required": ["t", "c"]},
                    {"type": "object", "properties": {"t": {"type": "string", "const": "C"}}, "required": ["t"]}]}),
            json!({"name": "n", "t": "A", "c": "1", "extra": true}),
            json!({"name": "n", "t": "A", "c": 0}),
        ),
    ]
}

fn composition_and_edge_cases() -> Vec<Case> {
    vec![
        (
            "allOf merges properties and required of object members",
            json!({"allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}]}),
            json!({"a": "x", "c": 1}),
            json!({"a": "x", "b": 0}),
        ),
        (
            "allOf intersects types (number and integer)",
            json!({"allOf": [{"type": "number"}, {"type": "integer"}]}),
            json!(3.0),
            json!(3),
        ),
        (
            "allOf of non-object members casts against each (a created string is padded to minLength)",
            json!({"allOf": [{"type": "string"}, {"minLength": 2}]}),
            json!(5),
            json!("  "),
        ),
        (
            "schema true keeps the value",
            json!(true),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (
            "schema false keeps the value",
            json!(false),
            json!(1),
            json!(1),
        ),
        (
            "empty schema keeps the value",
            json!({}),
            json!({"a": 1}),
            json!({"a": 1}),
        ),
        (
            "annotations only keep the value",
            json!({"title": "T", "description": "d"}),
            json!([1, "a"]),
            json!([1, "a"]),
        ),
        (
            "malformed type is ignored",
            json!({"type": 5}),
            json!("x"),
            json!("x"),
        ),
        (
            "unknown type names are ignored",
            json!({"type": ["foo"]}),
            json!(1),
            json!(1),
        ),
        (
            "malformed properties is ignored",
            json!({"properties": []}),
            json!({"a": 1}),
            json!({"a": 1}),
        ),
        (
            "malformed anyOf is ignored",
            json!({"anyOf": "x"}),
            json!(1),
            json!(1),
        ),
        (
            "empty anyOf is ignored",
            json!({"anyOf": []}),
            json!(1),
            json!(1),
        ),
        (
            "malformed enum is ignored",
            json!({"enum": 3}),
            json!("a"),
            json!("a"),
        ),
        (
            "malformed $ref is ignored",
            json!({"$ref": 5, "type": "string"}),
            json!(1),
            json!(""),
        ),
        (
            "an anchor $ref is left alone",
            json!({"$ref": "#anchor"}),
            json!(1),
            json!(1),
        ),
        (
            "a dangling $ref is left alone",
            json!({"$ref": "#/$defs/missing"}),
            json!(1),
            json!(1),
        ),
        (
            "malformed required and items are ignored",
            json!({"type": "object", "required": "a", "properties": {"l": {"type": "array", "items": 5, "minItems": -1}}}),
            json!({"l": [1], "x": 1}),
            json!({"l": [1]}),
        ),
        (
            "contradictory types keep the value",
            json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
            json!(true),
            json!(true),
        ),
        (
            "invalid patternProperties patterns match nothing",
            json!({"type": "object", "patternProperties": {"(": {"type": "string"}}}),
            json!({"(": 1}),
            json!({}),
        ),
        (
            "a pure $ref cycle keeps the value",
            json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            json!({"x": 1}),
            json!({"x": 1}),
        ),
        (
            "a union cycle keeps the value",
            json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
            json!([1, {"b": 2}]),
            json!([1, {"b": 2}]),
        ),
        (
            "a two-step $ref cycle keeps the value",
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
            json!("v"),
            json!("v"),
        ),
    ]
}

fn all_cases() -> Vec<Case> {
    [
        object_cases(),
        array_cases(),
        primitive_cases(),
        reference_cases(),
        union_cases(),
        composition_and_edge_cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[test]
fn cast_table() {
    let cases = all_cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(name, schema, input, expected)| {
            let actual = cast(&schema, input.clone());
            (actual != expected).then(|| {
                format!("{name}\n  input:    {input}\n  expected: {expected}\n  actual:   {actual}")
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn cast_table_is_idempotent() {
    for (name, schema, input, _) in all_cases() {
        let once = cast(&schema, input);
        let twice = cast(&schema, once.clone());
        assert_eq!(twice, once, "{name}: casting twice changed the result");
    }
}

// ----- depth limit and termination -----------------------------------------------------------

/// `levels` nested `{"next": ...}` objects around `leaf`.
fn nested(levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |inner, _| json!({ "next": inner }))
}

#[test]
fn required_recursive_property_is_created_down_to_the_depth_limit() {
    let schema = json!({
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}, "required": ["next"]}},
        "$ref": "#/$defs/N"
    });
    assert_eq!(
        cast(&schema, json!({})),
        nested(CAST_MAX_DEPTH, Value::Null)
    );
}

#[test]
fn values_deeper_than_the_limit_are_kept_unchanged() {
    let schema = json!({
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
        "$ref": "#/$defs/N"
    });
    // Below the limit the undeclared `noise` is dropped; past it the value is left alone.
    let leaf = json!({"noise": 1});
    let input = nested(CAST_MAX_DEPTH + 5, leaf.clone());
    let expected = {
        let mut kept = nested(5, leaf);
        kept = nested(CAST_MAX_DEPTH, kept);
        kept
    };
    assert_eq!(cast(&schema, input), expected);
    assert_eq!(
        cast(&schema, nested(3, json!({"noise": 1}))),
        nested(3, json!({}))
    );
}

#[test]
fn exponential_recursive_schemas_terminate() {
    // A binary tree whose both children are required: creation is budgeted.
    let tree = json!({
        "$defs": {"T": {"type": "object", "required": ["l", "r"],
            "properties": {"l": {"$ref": "#/$defs/T"}, "r": {"$ref": "#/$defs/T"}}}},
        "$ref": "#/$defs/T"
    });
    assert!(cast(&tree, json!(null)).is_object());
    // Nested unions whose branches all point back: selection is budgeted.
    let unions = json!({
        "$defs": {"U": {"type": "array", "items": {"anyOf": [
            {"$ref": "#/$defs/U"}, {"$ref": "#/$defs/U"}, {"$ref": "#/$defs/U"}]}}},
        "$ref": "#/$defs/U"
    });
    let bushy = (0..10).fold(json!(1), |inner, _| json!([inner.clone(), inner]));
    let _ = cast(&unions, bushy);
    let deep = (0..200).fold(json!("leaf"), |inner, _| json!([inner]));
    let _ = cast(&unions, deep);
    // Huge minItems does not allocate without bound.
    let huge = json!({"type": "array", "minItems": 1_000_000_000_u64});
    assert!(
        cast(&huge, json!([]))
            .as_array()
            .is_some_and(|a| a.len() < 1_000_000)
    );
}

#[test]
fn odd_inputs_never_panic() {
    let schemas = [
        json!(null),
        json!(5),
        json!("string"),
        json!([]),
        json!({"type": null, "properties": null, "items": null, "prefixItems": {}}),
        json!({"minimum": "x", "type": "integer", "exclusiveMinimum": true}),
        json!({"type": "integer", "minimum": 1e300}),
        json!({"type": "number", "exclusiveMaximum": -1e308}),
        json!({"$ref": "#/%E0%A4%A"}),
        json!({"$ref": "#/$defs/x/0/y"}),
        json!({"uniqueItems": true, "type": "array", "maxItems": -1}),
    ];
    let values = [
        json!(null),
        json!(1e308),
        json!(-0.0),
        json!(u64::MAX),
        json!(i64::MIN),
        json!({"a": [1, 2, {"b": null}]}),
        json!([[], {}, "", 0]),
    ];
    for schema in &schemas {
        for value in &values {
            let _ = cast(schema, value.clone());
        }
    }
}

// ----- real schemars output -------------------------------------------------------------------

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Address {
    street: String,
    zip: Option<String>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
enum Shape {
    Empty,
    Circle { radius: f64 },
    Square(f64),
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
struct Settings {
    retries: u32,
    label: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            retries: 3,
            label: "default".to_owned(),
        }
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Person {
    name: String,
    age: u8,
    nickname: Option<String>,
    home: Address,
    work: Option<Address>,
    previous: Vec<Address>,
    scores: HashMap<String, i64>,
    favourite: Shape,
    shapes: Vec<Shape>,
    tags: BTreeSet<String>,
    #[serde(default)]
    settings: Settings,
    pair: (u8, String),
}

/// Casts `noisy` to `T`'s schema and deserializes the result.
fn cast_into<T: JsonSchema + DeserializeOwned>(noisy: Value) -> T {
    let schema = schema_for::<T>();
    let cast = cast(&schema, noisy);
    serde_json::from_value(cast.clone())
        .unwrap_or_else(|error| panic!("cast result does not deserialize: {error}\n{cast:#}"))
}

#[test]
fn schemars_struct_with_nested_options_vecs_maps_and_enums() {
    let noisy = json!({
        "name": "Ada",
        "age": "thirty",
        "nickname": 7,
        "home": {"street": "Main", "zip": 12345, "country": "nowhere"},
        "work": {"street": null},
        "previous": [{"street": "Old"}, "junk", {"zip": "1"}],
        "scores": {"math": 9.0, "art": "high", "music": 3},
        "favourite": {"Circle": {"radius": "big"}, "junk": 1},
        "shapes": ["Empty", {"Square": 2}, "Hexagon", {"Circle": {}}],
        "tags": ["b", "a", "b", 3],
        "settings": {"retries": "many", "unknown": true},
        "pair": ["300", 5, "extra"],
        "unexpected": {"deep": [1, 2, 3]}
    });
    let person: Person = cast_into(noisy);
    assert_eq!(
        person,
        Person {
            name: "Ada".into(),
            age: 0,
            nickname: None,
            home: Address {
                street: "Main".into(),
                zip: None
            },
            work: Some(Address {
                street: String::new(),
                zip: None
            }),
            previous: vec![
                Address {
                    street: "Old".into(),
                    zip: None
                },
                Address {
                    street: String::new(),
                    zip: None
                },
                Address {
                    street: String::new(),
                    zip: Some("1".into())
                },
            ],
            scores: HashMap::from([("math".into(), 9), ("art".into(), 0), ("music".into(), 3)]),
            favourite: Shape::Circle { radius: 0.0 },
            shapes: vec![
                Shape::Empty,
                Shape::Square(2.0),
                Shape::Empty,
                Shape::Circle { radius: 0.0 }
            ],
            tags: BTreeSet::from(["a".into(), "b".into(), String::new()]),
            // `retries: -1` fits `integer` and is kept (its `minimum: 0` is a constraint), so
            // only the shape is repaired here; serde then rejects -1 for u32 — see below.
            settings: Settings {
                retries: 3,
                label: "default".into()
            },
            pair: (0, String::new()),
        }
    );
}

#[test]
fn constraint_failures_survive_the_cast() {
    // `age: 300` fits `integer` and is kept although `maximum: 255` fails: the cast only
    // repairs types, and validation reports the rest.
    let schema = schema_for::<Address>();
    assert_eq!(
        cast(&schema, json!({"street": "x", "zip": "not a zip code"})),
        json!({"street": "x", "zip": "not a zip code"})
    );
    let pair = schema_for::<(u8, String)>();
    assert_eq!(cast(&pair, json!([300, "x"])), json!([300, "x"]));
}

#[test]
fn schemars_defaults_fill_missing_and_mismatching_values() {
    let schema = schema_for::<Person>();
    // A missing optional `settings` stays missing (serde fills it); a wrong-typed one gets the
    // schema default next to its `$ref`.
    let base = json!({
        "name": "n", "age": 1, "home": {"street": "s"}, "previous": [], "scores": {},
        "favourite": "Empty", "shapes": [], "tags": [], "pair": [1, "x"]
    });
    let missing = cast(&schema, base.clone());
    assert!(missing.get("settings").is_none());
    let mut wrong = base;
    wrong["settings"] = json!("fast");
    let cast_wrong = cast(&schema, wrong);
    assert_eq!(
        cast_wrong["settings"],
        json!({"retries": 3, "label": "default"})
    );
    let person: Person = serde_json::from_value(cast_wrong).expect("deserializes");
    assert_eq!(person.settings, Settings::default());
}

#[test]
fn schemars_output_of_every_value_fits_its_own_type() {
    // Any junk, cast to a schemars schema, deserializes (modulo kept constraint failures).
    let junk = [
        json!(null),
        json!(42),
        json!("text"),
        json!([1, "a", null]),
        json!({"name": {"nested": true}, "pair": "no", "shapes": {"a": 1}}),
    ];
    for value in junk {
        let _: Person = cast_into(value.clone());
        let _: Vec<Shape> = cast_into(value.clone());
        let _: Option<Address> = cast_into(value.clone());
        let _: HashMap<String, Settings> = cast_into(value.clone());
        let _: Settings = cast_into(value);
    }
}
