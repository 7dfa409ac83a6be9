//! `cast` against the JSON-Schema-Test-Suite (draft2020-12): every instance the suite marks
//! valid is still valid after the cast.
//!
//! The suite comes from the source archive of the PyPI `jsonschema` package, unpacked by
//! `scripts/install-peers.sh` into `core/peers/json-schema-test-suite/`. Its remote documents
//! (`http://localhost:1234/...`) are served to the validator from that directory, so no test
//! touches the network. Only the top-level draft2020-12 files are read (not `optional/`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jsonschema::{Retrieve, Uri};
use opkit::schema::cast;
use serde_json::Value;

/// Suite cases opkit cannot honour, each with the reason (also listed in the `cast` docs).
/// `(file, case description, test description, reason)`; empty: every valid instance stays valid.
const NOT_HONOURED: &[(&str, &str, &str, &str)] = &[];

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/json-schema-test-suite")
}

/// Serves `http://localhost:1234/<path>` from the suite's `remotes/` directory.
struct Remotes {
    root: PathBuf,
}

impl Retrieve for Remotes {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let path = uri
            .as_str()
            .strip_prefix("http://localhost:1234/")
            .ok_or_else(|| format!("not a suite remote: {uri}"))?;
        let text = std::fs::read_to_string(self.root.join(path))?;
        Ok(serde_json::from_str(&text)?)
    }
}

struct Instance {
    file: String,
    case: String,
    test: String,
    schema: Value,
    data: Value,
}

/// Every instance marked valid in the draft2020-12 files.
fn valid_instances(dir: &Path) -> Vec<Instance> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut instances = Vec::new();
    for path in files {
        let file = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("suite file");
        let cases: Vec<Value> = serde_json::from_str(&text).expect("suite JSON");
        for case in cases {
            for test in case["tests"].as_array().into_iter().flatten() {
                if test["valid"] != Value::Bool(true) {
                    continue;
                }
                instances.push(Instance {
                    file: file.clone(),
                    case: case["description"].as_str().unwrap_or_default().to_owned(),
                    test: test["description"].as_str().unwrap_or_default().to_owned(),
                    schema: case["schema"].clone(),
                    data: test["data"].clone(),
                });
            }
        }
    }
    instances
}

#[test]
fn valid_instances_stay_valid_after_cast() {
    let dir = suite_dir();
    let tests = dir.join("tests/draft2020-12");
    assert!(
        tests.is_dir(),
        "the JSON-Schema-Test-Suite is missing at {}: run `bash scripts/install-peers.sh`",
        tests.display()
    );
    let instances = valid_instances(&tests);
    assert!(
        instances.len() >= 700,
        "only {} valid instances",
        instances.len()
    );

    let mut validators = HashMap::new();
    let mut kept_valid = 0;
    let mut not_honoured = Vec::new();
    let mut failures = Vec::new();
    for instance in &instances {
        let key = instance.schema.to_string();
        let validator = validators.entry(key).or_insert_with(|| {
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(false)
                .with_retriever(Remotes {
                    root: dir.join("remotes"),
                })
                .build(&instance.schema)
                .unwrap_or_else(|error| panic!("{}: {}: {error}", instance.file, instance.case))
        });
        assert!(
            validator.is_valid(&instance.data),
            "the validator rejects a valid suite instance: {} / {} / {}",
            instance.file,
            instance.case,
            instance.test
        );
        let cast = cast(&instance.schema, instance.data.clone());
        if validator.is_valid(&cast) {
            kept_valid += 1;
            continue;
        }
        let known = NOT_HONOURED.iter().find(|(file, case, test, _)| {
            *file == instance.file && *case == instance.case && *test == instance.test
        });
        let report = format!(
            "{} / {} / {}\n  schema: {}\n  valid:  {}\n  cast:   {}",
            instance.file, instance.case, instance.test, instance.schema, instance.data, cast
        );
        match known {
            Some(_) => not_honoured.push(report),
            None => failures.push(report),
        }
    }
    println!(
        "JSON-Schema-Test-Suite draft2020-12: {kept_valid} of {} valid instances still valid after cast, \
         {} not honoured (documented), {} unexplained",
        instances.len(),
        not_honoured.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} valid instance(s) became invalid:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
