//! Every valid instance of the JSON-Schema-Test-Suite (draft 2020-12, the version
//! `scripts/install-peers.sh` unpacks to `core/peers/json-schema-test-suite/`) typechecks
//! as an object literal of its schema's TypeScript type: `const v: T = <instance>;`.
//!
//! The types are written as JSON Schema reads a schema ([`TypeScriptTypes::strict`]: object
//! and array keywords without `type` constrain nothing else). One difference is intended and
//! counted, not failed: an object type lists its declared properties, so TypeScript's
//! excess-property check refuses a literal with others (TS2353, TS2561) that the schema
//! accepts. Any other error fails the test, naming the suite case.

use super::{Diagnostic, check};
use opkit_adapters::client::typescript::TypeScriptTypes;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The excess-property check: an object literal with a property its type does not declare.
const EXCESS_PROPERTY: [&str; 2] = ["TS2353", "TS2561"];

/// A valid instance's place in the suite.
struct Case {
    file: String,
    group: String,
    test: String,
}

/// Where the client's own reading ([`TypeScriptTypes::new`]: object and array keywords
/// without `type` mean an object or an array, as OpenAPI documents mean them) refuses a
/// valid instance: `(file, group, test)`. Each is a non-object (or non-array) instance of a
/// schema with object (or array) keywords and no `type`; the group of JavaScript property
/// names also meets TypeScript's view of `{}`, whose `toString` is `Object`'s.
const INFERRED: &[(&str, &str, &str)] = &[
    (
        "additionalProperties.json",
        "additionalProperties being false does not allow other properties",
        "ignores arrays",
    ),
    (
        "additionalProperties.json",
        "additionalProperties being false does not allow other properties",
        "ignores strings",
    ),
    (
        "additionalProperties.json",
        "additionalProperties being false does not allow other properties",
        "ignores other non-objects",
    ),
    (
        "items.json",
        "a schema given for items",
        "JavaScript pseudo-array is valid",
    ),
    (
        "prefixItems.json",
        "a schema given for prefixItems",
        "JavaScript pseudo-array is valid",
    ),
    (
        "properties.json",
        "object properties validation",
        "ignores arrays",
    ),
    (
        "properties.json",
        "object properties validation",
        "ignores other non-objects",
    ),
    (
        "properties.json",
        "properties whose names are Javascript object property names",
        "ignores arrays",
    ),
    (
        "properties.json",
        "properties whose names are Javascript object property names",
        "ignores other non-objects",
    ),
    (
        "properties.json",
        "properties whose names are Javascript object property names",
        "none of the properties mentioned",
    ),
    ("ref.json", "root pointer ref", "match"),
    ("ref.json", "root pointer ref", "recursive match"),
    ("required.json", "required validation", "ignores arrays"),
    ("required.json", "required validation", "ignores strings"),
    (
        "required.json",
        "required validation",
        "ignores other non-objects",
    ),
];

#[test]
fn every_valid_instance_of_the_suite_typechecks() {
    let report = typecheck_suite(TypeScriptTypes::strict(), "strict");
    assert!(
        report.refused.is_empty(),
        "{} valid instances do not typecheck:\n{}",
        report.refused.len(),
        report.refused.join("\n")
    );
    assert!(
        report.total > 500,
        "the suite was read: {} valid instances",
        report.total
    );
    assert!(
        report.excess * 10 < report.total,
        "the excess-property difference stays small: {} of {}",
        report.excess,
        report.total
    );
}

#[test]
fn the_clients_reading_refuses_only_the_instances_it_documents() {
    let report = typecheck_suite(TypeScriptTypes::new(), "inferred");
    let mut expected: Vec<String> = INFERRED
        .iter()
        .map(|(file, group, test)| format!("{file} / {group} / {test}"))
        .collect();
    expected.sort();
    let mut refused: Vec<String> = report.places.clone();
    refused.sort();
    refused.dedup();
    assert_eq!(refused, expected, "refused:\n{}", report.refused.join("\n"));
}

/// What `tsc` said of the suite's valid instances.
struct Report {
    /// Valid instances written.
    total: usize,
    /// Refused only by the excess-property check.
    excess: usize,
    /// Refused otherwise, with the error.
    refused: Vec<String>,
    /// Where each refusal is: `file / group / test`.
    places: Vec<String>,
}

/// Writes every valid instance as a literal of its schema's type, and typechecks them.
fn typecheck_suite(mut types: TypeScriptTypes, label: &str) -> Report {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../core/peers/json-schema-test-suite/tests/draft2020-12");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| {
            panic!(
                "the JSON-Schema-Test-Suite is not at {}: run scripts/install-peers.sh ({error})",
                dir.display()
            )
        })
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();

    let mut cases_ts = String::new();
    // Line (1-based) of `cases.ts` → the case written there.
    let mut cases: BTreeMap<usize, Case> = BTreeMap::new();
    // The import is line 1.
    let mut line = 2;
    let mut group_index = 0;
    for path in &files {
        let file = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let groups: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("a suite file reads"))
                .expect("a suite file is JSON");
        for group in groups.as_array().expect("a list of groups") {
            group_index += 1;
            let name = format!("T{group_index}");
            types.add(&name, &group["schema"]);
            for test in group["tests"].as_array().expect("tests") {
                if test["valid"] != Value::Bool(true) {
                    continue;
                }
                let literal = serde_json::to_string(&test["data"]).expect("JSON");
                cases_ts.push_str(&format!("export const v{line}: S.{name} = {literal};\n"));
                cases.insert(
                    line,
                    Case {
                        file: file.clone(),
                        group: group["description"].as_str().unwrap_or_default().to_owned(),
                        test: test["description"].as_str().unwrap_or_default().to_owned(),
                    },
                );
                line += 1;
            }
        }
    }
    let declarations = types.declarations();
    let cases_ts = format!("import type * as S from \"./types\";\n{cases_ts}");
    let diagnostics = check(
        &format!("json-schema-suite-{label}"),
        &[("types.ts", &declarations), ("cases.ts", &cases_ts)],
    );

    let mut report = Report {
        total: cases.len(),
        excess: 0,
        refused: Vec::new(),
        places: Vec::new(),
    };
    for Diagnostic {
        file,
        line,
        code,
        text,
    } in &diagnostics
    {
        let case = (file == "cases.ts").then(|| cases.get(line)).flatten();
        let place = case.map_or_else(
            || format!("{file} line {line}"),
            |case| format!("{} / {} / {}", case.file, case.group, case.test),
        );
        if case.is_some() && EXCESS_PROPERTY.contains(&code.as_str()) {
            report.excess += 1;
        } else {
            report.refused.push(format!("{place}: {code} {text}"));
            report.places.push(place);
        }
    }
    eprintln!(
        "{label}: {} valid instances of {group_index} schemas in {} files: {} typecheck, {} are \
         refused only for properties their object type does not declare, {} otherwise; not \
         mapped: {}",
        report.total,
        files.len(),
        report.total - report.excess - report.refused.len(),
        report.excess,
        report.refused.len(),
        types.unmapped().len(),
    );
    report
}
