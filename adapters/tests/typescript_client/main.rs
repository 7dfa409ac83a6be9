//! The TypeScript client's types checked by the TypeScript compiler (`tsc --strict`, pinned
//! in `adapters/peers/typescript`): every valid instance of the JSON-Schema-Test-Suite
//! typechecks against its schema's type, and a registry of many shapes gives a client that
//! compiles, with its mistakes caught.
#![cfg(feature = "typescript-client")]

mod json_schema_suite;
mod shapes;

use opkit_testkit::dir::TempDir;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned TypeScript compiler, installed by `scripts/install-peers.sh`.
fn tsc() -> PathBuf {
    let tsc = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/typescript/node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "the TypeScript compiler is not installed at {}: run scripts/install-peers.sh",
        tsc.display()
    );
    tsc
}

/// One diagnostic of `tsc`: the file, the line (1-based), the code (`TS2322`) and the text.
#[derive(Debug)]
struct Diagnostic {
    file: String,
    line: usize,
    code: String,
    text: String,
}

/// Compiles `files` (name, text) with `tsc --strict --noEmit` in a fresh directory and
/// returns its diagnostics (empty when it compiles).
fn check(name: &str, files: &[(&str, &str)]) -> Vec<Diagnostic> {
    let dir = TempDir::new(&format!("ts-{name}"));
    for (file, text) in files {
        std::fs::write(dir.join(file), text).expect("a project file is written");
    }
    let names: Vec<String> = files
        .iter()
        .map(|(file, _)| format!("\"{file}\""))
        .collect();
    let tsconfig = format!(
        r#"{{
  "compilerOptions": {{
    "strict": true,
    "noEmit": true,
    "target": "es2022",
    "lib": ["es2022", "dom", "dom.iterable", "dom.asynciterable"],
    "module": "es2022",
    "moduleResolution": "bundler",
    "skipLibCheck": true
  }},
  "files": [{}]
}}"#,
        names.join(", ")
    );
    std::fs::write(dir.join("tsconfig.json"), tsconfig).expect("tsconfig is written");
    let output = Command::new(tsc())
        .args(["-p", "."])
        .current_dir(&*dir)
        .output()
        .expect("tsc runs");
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    let diagnostics: Vec<Diagnostic> = report.lines().filter_map(parse).collect();
    assert_eq!(
        output.status.success(),
        diagnostics.is_empty(),
        "tsc's status and report disagree:\n{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    diagnostics
}

/// `file(line,col): error TS1234: text`.
fn parse(line: &str) -> Option<Diagnostic> {
    let (file, rest) = line.split_once('(')?;
    let (position, rest) = rest.split_once("): error ")?;
    let (code, text) = rest.split_once(": ")?;
    Some(Diagnostic {
        file: file.to_owned(),
        line: position.split(',').next()?.parse().ok()?,
        code: code.to_owned(),
        text: text.to_owned(),
    })
}
