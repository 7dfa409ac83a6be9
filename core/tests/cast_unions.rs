//! Union branch choice of `opkit::schema::cast`: nested and referenced unions, item counts,
//! untyped branches, plain-value scoring, created strings, and untagged unions whose
//! branches a value is valid against.

use opkit::schema::{CompiledSchema, cast};
use serde_json::{Value, json};

fn cat() -> Value {
    json!({"type": "object", "properties": {"kind": {"const": "cat"}, "meow": {"type": "boolean"}},
        "required": ["kind", "meow"]})
}

fn dog() -> Value {
    json!({"type": "object", "properties": {"kind": {"const": "dog"}, "bark": {"type": "boolean"}},
        "required": ["kind", "bark"]})
}

/// Casts `value` and, when it was valid, checks that the result still is.
fn cast_keeping_validity(schema: &Value, value: Value) -> Value {
    let validator = CompiledSchema::compile(schema).expect("schema compiles");
    let was_valid = validator.is_valid(&value);
    let result = cast(schema, value.clone());
    if was_valid {
        assert!(
            validator.is_valid(&result),
            "valid {value} became invalid {result}"
        );
    }
    result
}

#[test]
fn a_nested_union_branch_scores_as_its_best_branch() {
    let schema = json!({"anyOf": [
        {"anyOf": [{"type": "string", "enum": ["red", "green"]}]},
        {"anyOf": [cat(), dog()]}
    ]});
    assert_eq!(
        cast_keeping_validity(&schema, json!({"kind": "dog"})),
        json!({"kind": "dog", "bark": false})
    );
    let one_of =
        json!({"oneOf": [{"oneOf": [{"enum": ["red", "green"]}]}, {"oneOf": [cat(), dog()]}]});
    assert_eq!(
        cast_keeping_validity(&one_of, json!({"kind": "dog"})),
        json!({"kind": "dog", "bark": false})
    );
}

#[test]
fn a_referenced_union_branch_scores_as_its_best_branch() {
    let schema = json!({
        "$defs": {"Color": {"anyOf": [{"const": "red"}, {"const": "green"}]}, "Pet": {"anyOf": [cat(), dog()]}},
        "anyOf": [{"$ref": "#/$defs/Color"}, {"$ref": "#/$defs/Pet"}, {"type": "null"}]
    });
    assert_eq!(
        cast_keeping_validity(&schema, json!({"kind": "dog", "bark": "loud"})),
        json!({"kind": "dog", "bark": false})
    );
    assert_eq!(
        cast_keeping_validity(&schema, json!("green")),
        json!("green")
    );
    assert_eq!(cast_keeping_validity(&schema, json!(null)), json!(null));
}

#[test]
fn item_counts_decide_between_a_tuple_and_an_array() {
    let pair_or_list = json!({"anyOf": [
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
        {"type": "array", "items": {"type": "integer"}}
    ]});
    assert_eq!(cast_keeping_validity(&pair_or_list, json!([5])), json!([5]));
    assert_eq!(
        cast_keeping_validity(&pair_or_list, json!([5, 6])),
        json!([5, 6])
    );
    assert_eq!(
        cast_keeping_validity(&pair_or_list, json!([1, 2, 3])),
        json!([1, 2, 3])
    );
    let holder = json!({"type": "object", "properties": {"xs": {"anyOf": [
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}], "minItems": 2},
        {"type": "array", "maxItems": 0}
    ]}}});
    assert_eq!(
        cast_keeping_validity(&holder, json!({"xs": []})),
        json!({"xs": []})
    );
}

#[test]
fn required_keys_are_checked_on_branches_without_a_type() {
    let schema = json!({"type": "object", "oneOf": [{"required": ["foo", "bar"]}, {"required": ["foo", "baz"]}]});
    assert_eq!(
        cast_keeping_validity(&schema, json!({"foo": 1, "baz": 3})),
        json!({"foo": 1, "baz": 3})
    );
    assert_eq!(
        cast_keeping_validity(&schema, json!({"foo": 1, "bar": 2})),
        json!({"foo": 1, "bar": 2})
    );
}

#[test]
fn plain_values_are_scored_by_validity_not_by_type() {
    // Nothing fits: like TypeBox, the first branch is cast to, not the first one whose type
    // matches the value.
    let literals = json!({"anyOf": [{"const": "dog"}, {"const": "red"}, {"const": 3}]});
    assert_eq!(cast_keeping_validity(&literals, json!(1)), json!("dog"));
    let string_or_enum =
        json!({"anyOf": [{"type": "string"}, {"anyOf": [{"const": "blue"}, {"const": 1}]}]});
    assert_eq!(
        cast_keeping_validity(&string_or_enum, json!(null)),
        json!("")
    );
    assert_eq!(cast_keeping_validity(&string_or_enum, json!(1)), json!(1));
}

#[test]
fn a_created_string_is_padded_to_its_minimum_length() {
    assert_eq!(
        cast(&json!({"type": "string", "minLength": 3}), json!(5)),
        json!("   ")
    );
    let object = json!({"type": "object", "properties": {"b": {"type": "string", "minLength": 1}}, "required": ["b"]});
    assert_eq!(cast(&object, json!("green")), json!({"b": " "}));
    // A kept string is not padded: that is a constraint failure for the validator.
    assert_eq!(
        cast(&json!({"type": "string", "minLength": 3}), json!("x")),
        json!("x")
    );
}

#[test]
fn an_untagged_union_keeps_the_branch_that_keeps_most_of_the_value() {
    let schema = json!({"anyOf": [
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}, "required": ["id"]}
    ]});
    assert_eq!(
        cast_keeping_validity(&schema, json!({"id": 1, "name": "n"})),
        json!({"id": 1, "name": "n"})
    );
    // Undeclared keys are still dropped, by the branch keeping the most.
    assert_eq!(
        cast_keeping_validity(&schema, json!({"id": 1, "name": "n", "extra": true})),
        json!({"id": 1, "name": "n"})
    );
    // A value valid against the narrower branch only is not widened.
    assert_eq!(
        cast_keeping_validity(&schema, json!({"id": 1, "name": 5})),
        json!({"id": 1})
    );
}

#[test]
fn a_union_with_a_default_uses_it_only_when_nothing_resembles_the_value() {
    let schema =
        json!({"anyOf": [dog(), {"type": "null"}], "default": {"kind": "dog", "bark": true}});
    assert_eq!(
        cast(&schema, json!(7)),
        json!({"kind": "dog", "bark": true})
    );
    assert_eq!(
        cast(&schema, json!({"kind": "dog"})),
        json!({"kind": "dog", "bark": false})
    );
}

#[test]
fn conditional_and_dependent_subschemas_keep_what_they_evaluate() {
    let conditional = json!({
        "type": "object",
        "if": {"properties": {"foo": {"const": "then"}}, "required": ["foo"]},
        "then": {"properties": {"bar": {"type": "string"}}, "required": ["bar"]},
        "else": {"properties": {"baz": {"type": "string"}}, "required": ["baz"]},
        "unevaluatedProperties": false
    });
    assert_eq!(
        cast_keeping_validity(&conditional, json!({"foo": "then", "bar": "b"})),
        json!({"foo": "then", "bar": "b"})
    );
    assert_eq!(
        cast_keeping_validity(&conditional, json!({"foo": "then"})),
        json!({"foo": "then", "bar": ""})
    );
    let dependent = json!({
        "properties": {"foo": {"type": "string"}},
        "dependentSchemas": {"foo": {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]}},
        "unevaluatedProperties": false
    });
    assert_eq!(
        cast_keeping_validity(&dependent, json!({"foo": "f", "bar": "bar"})),
        json!({"foo": "f", "bar": "bar"})
    );
}

#[test]
fn dropping_undeclared_keys_keeps_a_valid_object_valid() {
    let counted =
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2});
    assert_eq!(
        cast_keeping_validity(&counted, json!({"a": 1, "b": 2})),
        json!({"a": 1, "b": 2})
    );
    // An invalid object is cast as usual: its undeclared keys are dropped.
    assert_eq!(
        cast_keeping_validity(&counted, json!({"a": "x", "b": 2, "c": 3})),
        json!({"a": 0})
    );
    let dependent = json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "dependentRequired": {"a": ["b"]}});
    assert_eq!(
        cast_keeping_validity(&dependent, json!({"a": 1, "b": 2, "c": 3})),
        json!({"a": 1, "b": 2})
    );
}
