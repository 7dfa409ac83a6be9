//! The notes service's TypeScript client as a frontend uses it: the committed
//! `client/index.ts` is what `notes export-client typescript` writes; it compiles with
//! `tsc --strict` (the TypeScript compiler pinned in `adapters/peers/typescript`), the
//! mistakes in `client/type-errors.ts` are each a compile error on their own line, and
//! `client/example.ts`, compiled, runs in Node against a live `notes serve`.

mod support;

use opkit_testkit::dir::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The committed client and the programs that use it.
fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("client")
}

/// The pinned TypeScript compiler, installed by `scripts/install-peers.sh`.
fn tsc() -> PathBuf {
    let tsc = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../adapters/peers/typescript/node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "the TypeScript compiler is not installed at {}: run scripts/install-peers.sh",
        tsc.display()
    );
    tsc
}

/// The strictest settings a frontend would use, for the files given, emitting to `out/`.
const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "strict": true,
    "noImplicitReturns": true,
    "noFallthroughCasesInSwitch": true,
    "target": "es2022",
    "lib": ["es2022", "dom", "dom.iterable", "dom.asynciterable"],
    "module": "es2022",
    "moduleResolution": "bundler",
    "outDir": "out",
    "skipLibCheck": true
  },
  "files": ["index.ts", "example.ts", "type-errors.ts"]
}"#;

/// A project of the committed client and its programs, `type-errors.ts` changed by `edit`.
fn project(name: &str, edit: impl Fn(&str) -> String) -> TempDir {
    let dir = TempDir::new(&format!("notes-ts-{name}"));
    for file in ["index.ts", "example.ts", "type-errors.ts"] {
        let text = std::fs::read_to_string(client_dir().join(file)).expect("the client file reads");
        let text = if file == "type-errors.ts" {
            edit(&text)
        } else {
            text
        };
        std::fs::write(dir.join(file), text).expect("the project file is written");
    }
    std::fs::write(dir.join("tsconfig.json"), TSCONFIG).expect("tsconfig is written");
    dir
}

fn run_tsc(dir: &Path) -> Output {
    // Run in the project, so that tsc names files relative to it.
    Command::new(tsc())
        .args(["-p", "."])
        .current_dir(dir)
        .output()
        .expect("tsc runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn the_committed_client_is_what_notes_writes() {
    let dir = TempDir::new("notes-ts-export");
    let process = support::notes(&["export-client", "typescript", &dir.to_string_lossy()]).await;
    assert_eq!(
        process.ready,
        format!("wrote {}", dir.join("index.ts").display())
    );
    let written = std::fs::read_to_string(dir.join("index.ts")).expect("index.ts is written");
    let committed =
        std::fs::read_to_string(client_dir().join("index.ts")).expect("the client is committed");
    assert!(
        written == committed,
        "examples/notes/client/index.ts is not what the registry writes now: run \
         `cargo run -p opkit-example-notes -- export-client typescript examples/notes/client` \
         and commit the change"
    );
    // Stable: writing it again gives the same bytes.
    let again = TempDir::new("notes-ts-export-again");
    support::notes(&["export-client", "typescript", &again.to_string_lossy()]).await;
    assert_eq!(
        std::fs::read(again.join("index.ts")).expect("written again"),
        written.into_bytes()
    );
}

#[test]
fn the_client_compiles_strict_and_each_mistake_is_an_error_on_its_line() {
    // As committed: every `@ts-expect-error` must meet an error (an unmet one is itself
    // an error), and nothing else may fail.
    let dir = project("strict", str::to_owned);
    let output = run_tsc(&dir);
    assert!(
        output.status.success(),
        "tsc --strict fails:\n{}",
        text(&output)
    );

    // Without the directives: exactly the lines after them fail.
    let dir = project("mistakes", |text| {
        text.replace("// @ts-expect-error", "// (expected error)")
    });
    let output = run_tsc(&dir);
    assert!(!output.status.success(), "the mistakes compiled");
    let source = std::fs::read_to_string(client_dir().join("type-errors.ts")).expect("reads");
    let expected: Vec<usize> = source
        .lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with("// @ts-expect-error"))
        .map(|(index, _)| index + 2)
        .collect();
    let report = text(&output);
    let mut failed: Vec<usize> = report
        .lines()
        .filter_map(|line| line.strip_prefix("type-errors.ts("))
        .filter_map(|rest| rest.split(',').next()?.parse().ok())
        .collect();
    failed.dedup();
    assert_eq!(failed, expected, "tsc reported:\n{report}");
    assert!(
        report
            .lines()
            .all(|line| !line.starts_with("index.ts") && !line.starts_with("example.ts")),
        "{report}"
    );
    assert_eq!(expected.len(), 10, "every mistake is counted");
}

#[tokio::test]
async fn a_frontend_program_calls_the_live_service() {
    let dir = project("live", str::to_owned);
    let output = run_tsc(&dir);
    assert!(
        output.status.success(),
        "tsc --strict fails:\n{}",
        text(&output)
    );
    std::fs::write(dir.join("out/package.json"), r#"{"type":"module"}"#).expect("written");
    std::fs::write(
        dir.join("out/run.mjs"),
        r#"import { main } from "./example.js";
const [baseUrl, admin, reader] = process.argv.slice(2);
main(baseUrl, admin, reader).then(
  (lines) => console.log(JSON.stringify(lines)),
  (error) => { console.error(error); process.exit(1); },
);
"#,
    )
    .expect("written");

    let db = support::temp_db("ts-client");
    let (_server, base) = support::serve(&db, &[]).await;
    let node = tokio::process::Command::new("node")
        .arg(dir.join("out/run.mjs"))
        .args([
            format!("{base}/api"),
            "demo-key".into(),
            "reader-key".into(),
        ])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), node)
        .await
        .expect("the program ends within 60 s")
        .expect("node runs");
    assert!(
        output.status.success(),
        "the program failed:\n{}",
        text(&output)
    );
    let lines: Vec<String> =
        serde_json::from_slice(&output.stdout).expect("the program prints its lines as JSON");
    assert_eq!(
        lines,
        [
            "created 1 milk (local)",
            "got 1 milk: 2 litres",
            "get missing: EXECUTION_ERROR NOT_FOUND 404 mayHaveRun=true",
            "create taken: EXECUTION_ERROR CONFLICT 409",
            "reader delete: ACCESS_DENIED 403 mayHaveRun=false",
            "feed: milk@local, eggs@local",
            "first of feed: milk",
            "feed before abort: milk",
            "aborted feed: ABORTED",
            "bad input: VALIDATION_ERROR 400 mayHaveRun=false",
            "list: milk, eggs",
        ]
    );
}
