//! The intended differences between opkit's `cast` and TypeBox `Value.Cast`, and the
//! classifier that explains a disagreement by them.
//!
//! A disagreement is split into *sites*: the places where the two outputs differ (a key
//! present in one output only, or differing leaves). Every site must be explained by one
//! class below, judged from the input, both outputs and the schemas that can apply at the
//! site's path (every branch, reference and member along the way); a pair with any
//! unexplained site is a failure. The classes are the deviations documented in
//! `opkit::schema::cast` (section "Deviations from TypeBox").

use std::collections::HashMap;

use serde_json::{Map, Value};

/// One generated pair and both outputs.
pub struct Pair<'a> {
    pub schema: &'a Value,
    pub value: &'a Value,
    pub typebox: &'a Value,
    pub opkit: &'a Value,
}

/// A class of intended difference. The order is the order of classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deviation {
    /// TypeBox returns a value that already validates untouched, undeclared keys included;
    /// opkit drops the keys no schema declares (normalizing drops undeclared
    /// properties). Explains a key only TypeBox kept, with the input's value, that no
    /// schema which the enclosing object is valid against declares (a declared one would
    /// be lost data: that is a failure).
    UndeclaredKeyDropped,
    /// opkit keeps `additionalProperties: true` entries of an invalid object; TypeBox keeps
    /// extras only for an `additionalProperties` schema.
    AdditionalTrueKept,
    /// Constraint failures are kept for the validator: opkit keeps a value whose only
    /// problems are `minLength`, `maxLength`, `minimum`, `maximum`, `multipleOf`,
    /// `minProperties` (also when they decide between union branches); TypeBox replaces it
    /// by a created value.
    ConstraintKept,
    /// A value no branch of a nullable union resembles becomes `null` (a mismatching
    /// `Option<T>` is `None`); TypeBox casts it to the first branch.
    NullableBecomesNull,
    /// A union's `default` replaces only a value no branch resembles; TypeBox returns the
    /// default for any value the union rejects.
    UnionDefaultOnlyWithoutResemblance,
    /// TypeBox quirk not copied: an intersect (`allOf`) that rejects the value is recreated
    /// and the value's entries assigned over it, or reset to the created value when that
    /// fails; opkit casts against the merged members and keeps what fits.
    IntersectReset,
    /// TypeBox quirk not copied: JavaScript arrays are objects, so TypeBox scores an array
    /// against object branches and casts it to an object built from its (missing)
    /// properties; opkit treats an array as an array.
    ArrayCastToObject,
    /// A schema without any constraint (`{}`, TypeBox `Unknown`) creates `null` in opkit;
    /// TypeBox creates `{}`, or leaves a missing required property missing (`undefined`).
    UnconstrainedCreatesNull,
    /// An invalid `uniqueItems` array loses the duplicates among its items as opkit cast
    /// them; an item another class cast differently (to `null`, say) can be a duplicate in
    /// opkit's output and not in TypeBox's. Explains an array of another length than
    /// TypeBox's, shorter than the input, without duplicates, where the input is invalid
    /// against a `uniqueItems` schema.
    DuplicatesFollowTheItems,
}

impl Deviation {
    /// Every class, in classification order.
    pub const ALL: &'static [Deviation] = &[
        Deviation::UndeclaredKeyDropped,
        Deviation::AdditionalTrueKept,
        Deviation::ConstraintKept,
        Deviation::NullableBecomesNull,
        Deviation::UnionDefaultOnlyWithoutResemblance,
        Deviation::IntersectReset,
        Deviation::ArrayCastToObject,
        Deviation::UnconstrainedCreatesNull,
        Deviation::DuplicatesFollowTheItems,
    ];
}

/// Constraint keywords whose failures opkit keeps for the validator.
const CONSTRAINTS: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minProperties",
    "maxProperties",
];

/// The classes explaining every site of `pair`, or `Err` with the first unexplained site.
pub fn classify(pair: &Pair<'_>, validators: &mut Validators) -> Result<Vec<Deviation>, String> {
    let mut sites = Vec::new();
    diff(pair.typebox, pair.opkit, &mut Vec::new(), &mut sites);
    let mut classes = Vec::new();
    for site in &sites {
        let class = Deviation::ALL
            .iter()
            .copied()
            .find(|class| explains(*class, pair, site, validators))
            .ok_or_else(|| {
                format!(
                    "unexplained at /{}: typebox {}, opkit {}",
                    site.path.join("/"),
                    show(site.typebox),
                    show(site.opkit)
                )
            })?;
        if !classes.contains(&class) {
            classes.push(class);
        }
    }
    Ok(classes)
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "(absent)".to_owned(), Value::to_string)
}

// ----- sites ---------------------------------------------------------------------------------

/// A place where the outputs differ.
struct Site<'a> {
    path: Vec<String>,
    typebox: Option<&'a Value>,
    opkit: Option<&'a Value>,
}

fn diff<'a>(
    typebox: &'a Value,
    opkit: &'a Value,
    path: &mut Vec<String>,
    sites: &mut Vec<Site<'a>>,
) {
    match (typebox, opkit) {
        (Value::Object(t), Value::Object(o)) => {
            let mut keys: Vec<&String> = t.keys().chain(o.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                path.push(key.clone());
                match (t.get(key), o.get(key)) {
                    (Some(t), Some(o)) => diff(t, o, path, sites),
                    (t, o) => sites.push(Site {
                        path: path.clone(),
                        typebox: t,
                        opkit: o,
                    }),
                }
                path.pop();
            }
        }
        (Value::Array(t), Value::Array(o)) if t.len() == o.len() => {
            for (index, (t, o)) in t.iter().zip(o).enumerate() {
                path.push(index.to_string());
                diff(t, o, path, sites);
                path.pop();
            }
        }
        _ if json_equal(typebox, opkit) => {}
        _ => sites.push(Site {
            path: path.clone(),
            typebox: Some(typebox),
            opkit: Some(opkit),
        }),
    }
}

/// The value at `path` inside `value`.
fn at<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |node, token| match node {
        Value::Object(map) => map.get(token),
        Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

// ----- classes -------------------------------------------------------------------------------

fn explains(
    class: Deviation,
    pair: &Pair<'_>,
    site: &Site<'_>,
    validators: &mut Validators,
) -> bool {
    let input = at(pair.value, &site.path);
    let here = || candidates(pair.schema, &site.path);
    match class {
        Deviation::UndeclaredKeyDropped => {
            let (Some(kept), None, Some((key, parent))) =
                (site.typebox, site.opkit, site.path.split_last())
            else {
                return false;
            };
            let parent_input = at(pair.value, parent);
            input.is_some_and(|input| json_equal(input, kept))
                && parent_input.is_some_and(|parent_input| {
                    candidates(pair.schema, parent).into_iter().all(|schema| {
                        !declares(schema, key)
                            || !validators.is_valid(pair.schema, schema, parent_input)
                    })
                })
        }
        Deviation::AdditionalTrueKept => {
            let (None, Some(kept), Some((_, parent))) =
                (site.typebox, site.opkit, site.path.split_last())
            else {
                return false;
            };
            input.is_some_and(|input| json_equal(input, kept))
                && candidates(pair.schema, parent)
                    .into_iter()
                    .any(|schema| schema.get("additionalProperties") == Some(&Value::Bool(true)))
        }
        Deviation::ConstraintKept => {
            let (Some(input), Some(opkit)) = (input, site.opkit) else {
                return false;
            };
            // opkit kept the input here, or kept a value that fails only constraints.
            json_equal(input, opkit)
                && here().into_iter().any(|schema| {
                    !validators.is_valid(pair.schema, schema, input)
                        && validators.is_valid_unconstrained(pair.schema, schema, input)
                })
        }
        Deviation::NullableBecomesNull => {
            site.opkit == Some(&Value::Null)
                && site.typebox.is_some_and(|t| !t.is_null())
                && here().into_iter().any(|schema| {
                    has_null_branch(schema)
                        && resembles_no_branch(pair.schema, schema, input, validators)
                })
        }
        Deviation::UnionDefaultOnlyWithoutResemblance => here().into_iter().any(|schema| {
            schema.get("anyOf").is_some()
                && schema
                    .get("default")
                    .is_some_and(|default| site.typebox == Some(default))
        }),
        Deviation::IntersectReset => (0..=site.path.len()).any(|length| {
            let prefix = &site.path[..length];
            at(pair.value, prefix).is_some_and(|input| {
                candidates(pair.schema, prefix).into_iter().any(|schema| {
                    schema.get("allOf").is_some()
                        && !validators.is_valid(pair.schema, schema, input)
                })
            })
        }),
        Deviation::ArrayCastToObject => (0..=site.path.len()).any(|length| {
            let prefix = &site.path[..length];
            at(pair.value, prefix).is_some_and(Value::is_array)
                && candidates(pair.schema, prefix)
                    .into_iter()
                    .any(|schema| schema.get("type") == Some(&Value::from("object")))
        }),
        Deviation::UnconstrainedCreatesNull => {
            site.opkit == Some(&Value::Null)
                && matches!(site.typebox, None | Some(Value::Object(_)))
                && site
                    .typebox
                    .is_none_or(|t| t.as_object().is_some_and(Map::is_empty))
                && here().into_iter().any(is_unconstrained)
        }
        Deviation::DuplicatesFollowTheItems => {
            duplicates_follow_the_items(pair, site, input, validators)
        }
    }
}

/// The site of [`Deviation::DuplicatesFollowTheItems`].
fn duplicates_follow_the_items(
    pair: &Pair<'_>,
    site: &Site<'_>,
    input: Option<&Value>,
    validators: &mut Validators,
) -> bool {
    let (Some(Value::Array(input_items)), Some(Value::Array(typebox)), Some(Value::Array(opkit))) =
        (input, site.typebox, site.opkit)
    else {
        return false;
    };
    let unique = opkit
        .iter()
        .enumerate()
        .all(|(i, item)| opkit[..i].iter().all(|earlier| !json_equal(earlier, item)));
    typebox.len() != opkit.len()
        && opkit.len() < input_items.len()
        && unique
        && candidates(pair.schema, &site.path)
            .into_iter()
            .any(|schema| {
                schema.get("uniqueItems") == Some(&Value::Bool(true))
                    && !validators.is_valid(pair.schema, schema, input.unwrap_or(&Value::Null))
            })
}

fn declares(schema: &Value, key: &str) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| properties.contains_key(key))
        || matches!(
            schema.get("additionalProperties"),
            Some(Value::Bool(true) | Value::Object(_))
        )
}

fn has_null_branch(schema: &Value) -> bool {
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| {
            branches
                .iter()
                .any(|b| b.get("type") == Some(&Value::from("null")))
        })
}

/// `input` (absent: a created value) resembles no non-null branch of the union `schema`: it
/// is invalid against each even without constraints, and an object has none of their
/// declared keys (opkit would score those).
fn resembles_no_branch(
    root: &Value,
    schema: &Value,
    input: Option<&Value>,
    validators: &mut Validators,
) -> bool {
    let Some(input) = input else {
        return true;
    };
    let mut branches = Vec::new();
    for branch in schema
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        expand(root, branch, &mut branches);
    }
    branches
        .into_iter()
        .filter(|branch| branch.get("type") != Some(&Value::from("null")))
        .all(|branch| {
            let declared_present = branch
                .get("properties")
                .and_then(Value::as_object)
                .zip(input.as_object())
                .is_some_and(|(properties, object)| {
                    properties.keys().any(|k| object.contains_key(k))
                });
            !declared_present && !validators.is_valid_unconstrained(root, branch, input)
        })
}

fn is_unconstrained(schema: &Value) -> bool {
    schema.as_object().is_some_and(|map| {
        map.keys()
            .all(|key| matches!(key.as_str(), "$defs" | "title" | "description" | "default"))
            && !map.contains_key("default")
    })
}

// ----- the schemas that can apply at a path --------------------------------------------------

/// Every schema object that can apply at `path`: along the way every `$ref` target, `allOf`
/// member and union branch is followed.
fn candidates<'a>(root: &'a Value, path: &[String]) -> Vec<&'a Value> {
    let mut current = Vec::new();
    expand(root, root, &mut current);
    for token in path {
        let mut next = Vec::new();
        for schema in &current {
            for child in children(schema, token) {
                expand(root, child, &mut next);
            }
        }
        current = next;
    }
    current
}

/// `schema` and what applies in place with it (`$ref`, `allOf`, `anyOf`, `oneOf`).
fn expand<'a>(root: &'a Value, schema: &'a Value, into: &mut Vec<&'a Value>) {
    if !schema.is_object()
        || into.iter().any(|seen| std::ptr::eq(*seen, schema))
        || into.len() > 256
    {
        return;
    }
    into.push(schema);
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str)
        && let Some(target) = reference
            .strip_prefix("#")
            .and_then(|pointer| root.pointer(pointer))
    {
        expand(root, target, into);
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        for member in schema
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            expand(root, member, into);
        }
    }
}

/// The subschemas `schema` gives the child `token` (a key or an index).
fn children<'a>(schema: &'a Value, token: &str) -> Vec<&'a Value> {
    let mut found = Vec::new();
    if let Some(property) = schema.get("properties").and_then(|p| p.get(token)) {
        found.push(property);
    }
    if let Some(patterns) = schema.get("patternProperties").and_then(Value::as_object) {
        found.extend(patterns.values());
    }
    if let Some(extra @ Value::Object(_)) = schema.get("additionalProperties") {
        found.push(extra);
    }
    if let Ok(index) = token.parse::<usize>() {
        match schema.get("items") {
            Some(Value::Array(items)) => found.extend(items.get(index)),
            Some(items @ Value::Object(_)) => found.push(items),
            _ => {}
        }
        if let Some(Value::Array(prefix)) = schema.get("prefixItems") {
            found.extend(prefix.get(index));
        }
    }
    found
}

// ----- validation ----------------------------------------------------------------------------

/// Validators of subschemas (with the root's `$defs`), compiled once each.
#[derive(Default)]
pub struct Validators {
    compiled: HashMap<(usize, bool), Option<jsonschema::Validator>>,
}

impl Validators {
    /// `value` is valid against `schema`, a subschema of `root`.
    fn is_valid(&mut self, root: &Value, schema: &Value, value: &Value) -> bool {
        self.check(root, schema, value, false)
    }

    /// `value` is valid against `schema` once its constraint keywords are removed.
    fn is_valid_unconstrained(&mut self, root: &Value, schema: &Value, value: &Value) -> bool {
        self.check(root, schema, value, true)
    }

    fn check(&mut self, root: &Value, schema: &Value, value: &Value, unconstrained: bool) -> bool {
        let key = (std::ptr::from_ref(schema) as usize, unconstrained);
        let validator = self.compiled.entry(key).or_insert_with(|| {
            let mut document = schema.clone();
            if let (Value::Object(map), Some(defs)) = (&mut document, root.get("$defs")) {
                map.insert("$defs".to_owned(), defs.clone());
            }
            if unconstrained {
                strip_constraints(&mut document);
            }
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft201909)
                .should_validate_formats(false)
                .build(&document)
                .ok()
        });
        validator
            .as_ref()
            .is_some_and(|validator| validator.is_valid(value))
    }
}

/// Removes every constraint keyword from `schema` and its subschemas.
fn strip_constraints(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    for keyword in CONSTRAINTS {
        map.remove(*keyword);
    }
    for (keyword, value) in map.iter_mut() {
        match (keyword.as_str(), value) {
            // Maps from names to schemas: the names are not keywords.
            ("properties" | "patternProperties" | "$defs", Value::Object(schemas)) => {
                schemas.values_mut().for_each(strip_constraints);
            }
            (_, Value::Array(schemas)) => schemas.iter_mut().for_each(strip_constraints),
            (_, subschema) => strip_constraints(subschema),
        }
    }
}

/// JSON equality: numbers by value, objects regardless of key order.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, x)| y.get(k).is_some_and(|y| json_equal(x, y)))
        }
        _ => a == b,
    }
}
