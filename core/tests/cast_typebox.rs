//! Differential test of `cast` against the real TypeBox `Value.Cast`.
//!
//! `core/peers/typebox/cast_pairs.js` (run once, with a fixed seed) builds a few thousand
//! schemas with TypeBox's `Type.*` builders — objects, nesting, arrays, tuples, defaults,
//! integer vs number, enums, unions (nested, `$ref`'d, tagged), nullable, records,
//! `additionalProperties`, intersects — generates a value for each (valid, noisy or junk),
//! casts it with TypeBox and prints schema, value and TypeBox's output. Here each value is
//! cast with opkit and the outputs compared. Every disagreement must fall into a deviation
//! class of `cast_typebox/deviations.rs`; any other fails the test with the schema, value
//! and both outputs.

#[path = "cast_typebox/deviations.rs"]
mod deviations;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use opkit::schema::cast;
use serde_json::Value;

use deviations::{Deviation, Pair, Validators, json_equal};

const SEED: u32 = 1;
const PAIRS: usize = 3000;
/// Pairs the generator prints before the generated ones (valid `uniqueItems` arrays whose
/// items become equal once their undeclared keys are dropped).
const FIXED_PAIRS: usize = 2;

/// Runs the generator once and parses its lines.
fn typebox_pairs() -> Vec<Value> {
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/typebox");
    assert!(
        peers
            .join("node_modules/@sinclair/typebox/package.json")
            .is_file(),
        "TypeBox is missing in {}: run `bash scripts/install-peers.sh`",
        peers.display()
    );
    let mut child = Command::new("node")
        .arg("cast_pairs.js")
        .arg(SEED.to_string())
        .arg(PAIRS.to_string())
        .current_dir(&peers)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start node (is Node.js installed?): {error}"));
    let mut output = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut output)
        .expect("generator output");
    let status = child.wait().expect("generator exit");
    assert!(status.success(), "cast_pairs.js failed: {status}");
    output
        .lines()
        .map(|line| serde_json::from_str(line).expect("generator line is JSON"))
        .collect()
}

#[test]
fn cast_agrees_with_typebox() {
    let lines = typebox_pairs();
    assert_eq!(
        lines.len(),
        FIXED_PAIRS + PAIRS,
        "generator printed too few pairs"
    );
    let mut agree = 0;
    let mut refused = 0;
    let mut classified: Vec<(Deviation, usize)> =
        Deviation::ALL.iter().map(|class| (*class, 0)).collect();
    let mut unexplained = Vec::new();
    let mut validators = Validators::default();
    // `CAST_TYPEBOX_SHOW=<class>` prints the pairs a class explains.
    let show = std::env::var("CAST_TYPEBOX_SHOW").ok();
    for line in &lines {
        let (Some(value), Some(typebox)) = (line.get("value"), line.get("typebox")) else {
            refused += 1; // TypeBox threw (or returned `undefined`): nothing to compare
            continue;
        };
        let schema = &line["schema"];
        let opkit = cast(schema, value.clone());
        if json_equal(&opkit, typebox) {
            agree += 1;
            continue;
        }
        let pair = Pair {
            schema,
            value,
            typebox,
            opkit: &opkit,
        };
        match deviations::classify(&pair, &mut validators) {
            Ok(classes) => {
                if show.as_ref().is_some_and(|show| classes.iter().any(|c| format!("{c:?}") == *show)) {
                    println!(
                        "pair {} {classes:?}\n  schema:  {schema}\n  value:   {value}\n  typebox: {typebox}\n  opkit:   {opkit}",
                        line["id"]
                    );
                }
                for class in classes {
                    if let Some(entry) = classified.iter_mut().find(|(c, _)| *c == class) {
                        entry.1 += 1;
                    }
                }
            }
            Err(site) => unexplained.push(format!(
                "pair {}: {site}\n  schema:  {schema}\n  value:   {value}\n  typebox: {typebox}\n  opkit:   {opkit}",
                line["id"]
            )),
        }
    }
    let compared = lines.len() - refused;
    println!(
        "TypeBox differential (seed {SEED}): {agree} of {compared} pairs agree, {refused} refused by TypeBox"
    );
    for (class, count) in &classified {
        println!("  {count:5}  {class:?}");
    }
    println!("  {:5}  unexplained", unexplained.len());
    assert!(
        unexplained.is_empty(),
        "{} disagreement(s) with TypeBox outside the deviation table:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
}
