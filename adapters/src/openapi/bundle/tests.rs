//! Unit tests of the bundling: `$defs`, sharing, aliases, siblings, the budget.

use super::*;
use crate::openapi::document::SpecVersion;

fn bundle(root: &Value, version: SpecVersion, pointer: &str) -> Result<Value, MapError> {
    let defs = Definitions::new(Resolver { root, version }, usize::MAX);
    let mut bundle = SchemaBundle::new(&defs);
    let schema = bundle.schema(root.pointer(pointer).unwrap(), pointer)?;
    bundle.finish(schema)
}

#[test]
fn references_go_to_defs_and_the_top_is_inlined() {
    let root = json!({"components": {"schemas": {
        "Pet": {"type": "object", "properties": {"tag": {"$ref": "#/components/schemas/Tag"}}},
        "Tag": {"type": "string", "nullable": true},
        "Unused": {"type": "integer"}
    }}, "s": {"$ref": "#/components/schemas/Pet"}});
    assert_eq!(
        bundle(&root, SpecVersion::V3_0, "/components/schemas/Pet").unwrap(),
        json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}},
            "$defs": {"Tag": {"type": ["string", "null"]}}})
    );
    assert_eq!(
        bundle(&root, SpecVersion::V3_0, "/s").unwrap(),
        json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}},
            "$defs": {"Tag": {"type": ["string", "null"]}}})
    );
}

#[test]
fn shared_definitions_are_not_copied() {
    // Each level refers to the next twice: copying would be 2^30 nodes.
    let mut schemas = serde_json::Map::new();
    for i in 0..30 {
        schemas.insert(
            format!("L{i}"),
            json!({"type": "object", "properties": {
                "a": {"$ref": format!("#/components/schemas/L{}", i + 1)},
                "b": {"$ref": format!("#/components/schemas/L{}", i + 1)}
            }}),
        );
    }
    schemas.insert("L30".into(), json!({"type": "string"}));
    let root =
        json!({"components": {"schemas": schemas}, "s": {"$ref": "#/components/schemas/L0"}});
    let schema = bundle(&root, SpecVersion::V3_1, "/s").unwrap();
    assert_eq!(schema["$defs"].as_object().unwrap().len(), 30);
    assert!(serde_json::to_string(&schema).unwrap().len() < 5_000);
    let compiled = opkit::schema::CompiledSchema::compile(&schema).unwrap();
    assert!(compiled.is_valid(&json!({"a": {"b": {}}})));
    assert!(!compiled.is_valid(&json!({"a": {"b": 5}})));
}

#[test]
fn cycles_validate() {
    let root = json!({"components": {"schemas": {
        "Node": {"type": "object", "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
        }},
        "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}}
    }}});
    let node = bundle(&root, SpecVersion::V3_1, "/components/schemas/Node").unwrap();
    assert_eq!(
        node["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Node"})
    );
    let compiled = opkit::schema::CompiledSchema::compile(&node).unwrap();
    assert!(compiled.is_valid(&json!({"value": 1, "children": [{"value": 2, "children": []}]})));
    assert!(!compiled.is_valid(&json!({"value": 1, "children": [{"value": "x"}]})));
    let a = bundle(&root, SpecVersion::V3_1, "/components/schemas/A").unwrap();
    let compiled = opkit::schema::CompiledSchema::compile(&a).unwrap();
    assert!(compiled.is_valid(&json!({"b": {"a": {"b": {}}}})));
    assert!(!compiled.is_valid(&json!({"b": {"a": {"b": 5}}})));
}

#[test]
fn sibling_rules_differ_between_versions() {
    let root = json!({"components": {"schemas": {"Id": {"type": "integer", "description": "an id"}}},
        "a": {"$ref": "#/components/schemas/Id", "description": "the pet's id"},
        "b": {"$ref": "#/components/schemas/Id", "minimum": 1},
        "c": {"$ref": "#/components/schemas/Id", "nullable": true},
        "d": {"properties": {"x": {"$ref": "#/components/schemas/Id", "minimum": 1}}}
    });
    assert_eq!(
        bundle(&root, SpecVersion::V3_1, "/a").unwrap(),
        json!({"type": "integer", "description": "the pet's id"})
    );
    assert_eq!(
        bundle(&root, SpecVersion::V3_0, "/a").unwrap(),
        json!({"type": "integer", "description": "an id"})
    );
    assert_eq!(
        bundle(&root, SpecVersion::V3_1, "/b").unwrap(),
        json!({"minimum": 1, "allOf": [{"type": "integer", "description": "an id"}]})
    );
    assert_eq!(
        bundle(&root, SpecVersion::V3_0, "/c").unwrap(),
        json!({"anyOf": [{"type": "integer", "description": "an id"}, {"type": "null"}]})
    );
    assert_eq!(
        bundle(&root, SpecVersion::V3_1, "/d").unwrap()["properties"]["x"],
        json!({"$ref": "#/$defs/Id", "minimum": 1})
    );
}

#[test]
fn bad_references_name_their_pointer() {
    let root = json!({
        "a": {"properties": {"x": {"$ref": "other.yaml#/Pet"}}},
        "b": {"items": {"$ref": "#/components/schemas/Missing"}},
        "c": {"$ref": "#anchor"},
        "d": {"$ref": 5},
        "e": {"properties": {"x": 5}},
        "f": {"$ref": "#/f2"}, "f2": {"$ref": "#/f"}
    });
    let cases = [
        ("/a", "/a/properties/x/$ref", "outside the document"),
        ("/b", "/b/items/$ref", "points to nothing"),
        ("/c", "/c/$ref", "anchor"),
        ("/d", "/d/$ref", "must be a string"),
        ("/e", "/e/properties/x", "must be an object or a boolean"),
        ("/f", "/f/$ref", "circular"),
    ];
    for (pointer, at, message) in cases {
        let error = bundle(&root, SpecVersion::V3_1, pointer).unwrap_err();
        assert_eq!(error.pointer, at, "{error:?}");
        assert!(error.message.contains(message), "{error:?}");
    }
}

#[test]
fn long_alias_chains_resolve_and_odd_names_are_safe() {
    let mut schemas = serde_json::Map::new();
    for i in 0..500 {
        schemas.insert(
            format!("A{i}"),
            json!({"$ref": format!("#/components/schemas/A{}", i + 1)}),
        );
    }
    schemas.insert(
        "A500".into(),
        json!({"type": "object", "properties": {"n": {"$ref": "#/components/schemas/a b%"}}}),
    );
    schemas.insert("a b%".into(), json!({"type": "integer"}));
    let root = json!({"components": {"schemas": schemas}, "s": {"properties": {"x": {"$ref": "#/components/schemas/A0"}}}});
    let schema = bundle(&root, SpecVersion::V3_1, "/s").unwrap();
    assert_eq!(schema["properties"]["x"], json!({"$ref": "#/$defs/A500"}));
    assert_eq!(
        schema["$defs"]["A500"]["properties"]["n"],
        json!({"$ref": "#/$defs/a_b_"})
    );
    let compiled = opkit::schema::CompiledSchema::compile(&schema).unwrap();
    assert!(compiled.is_valid(&json!({"x": {"n": 1}})));
    assert!(!compiled.is_valid(&json!({"x": {"n": "1"}})));
}

#[test]
fn recursive_anchor_and_duplicate_required_degrade() {
    let root = json!({"components": {"schemas": {
        "Filter": {"$recursiveAnchor": true, "type": "object", "required": ["type", "type"],
            "properties": {"type": {"type": "string"}, "filters": {"type": "array", "items": {"$recursiveRef": "#"}}}}
    }}, "s": {"properties": {"f": {"$ref": "#/components/schemas/Filter"}}}});
    let schema = bundle(&root, SpecVersion::V3_1, "/s").unwrap();
    let filter = &schema["$defs"]["Filter"];
    assert_eq!(filter["required"], json!(["type"]));
    assert_eq!(
        filter["properties"]["filters"]["items"],
        json!({"$ref": "#/$defs/Filter"})
    );
    assert!(filter.get("$recursiveAnchor").is_none());
    let compiled = opkit::schema::CompiledSchema::compile(&schema).unwrap();
    assert!(compiled.is_valid(&json!({"f": {"type": "and", "filters": [{"type": "eq"}]}})));
    assert!(!compiled.is_valid(&json!({"f": {"type": "and", "filters": [{"filters": []}]}})));
}

#[test]
fn the_budget_stops_the_work() {
    let root = json!({"components": {"schemas": {"A": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}}}},
        "s": {"$ref": "#/components/schemas/A"}});
    let defs = Definitions::new(
        Resolver {
            root: &root,
            version: SpecVersion::V3_1,
        },
        6,
    );
    let mut bundle = SchemaBundle::new(&defs);
    let first = bundle.schema(&root["s"], "/s");
    assert!(first.is_ok(), "{first:?}");
    let mut again = SchemaBundle::new(&defs);
    let error = again.schema(&root["s"], "/s").unwrap_err();
    assert!(error.message.contains("budget"), "{error:?}");
    assert_eq!(defs.check_budget(), Err(BudgetExceeded { limit: 6 }));
}
