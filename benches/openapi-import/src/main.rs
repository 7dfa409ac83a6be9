//! OpenAPI import at the scale of real APIs: time and peak memory of `import_file` +
//! `register_into`, beside deserializing the same file with the `openapiv3` crate.
//!
//! Each measurement runs in a child process of its own, so that its peak resident memory is
//! its own (`VmHWM` from `/proc/self/status`, less the resident memory of the process before
//! it started). Children are killed past `IMPORT_TIMEOUT_SECS` (default 300) or
//! `IMPORT_MAX_RSS_MB` (default 8000), and the row says so.
//!
//! ```text
//! cargo run --release -- table github=PATH stripe=PATH ...
//! cargo run --release -- one import PATH      # one measurement
//! cargo run --release -- one serve PATH       # import, list every tool over MCP, call each
//!                                             # once, compile every validator
//! cargo run --release -- serve-table graph=PATH docusign=PATH ...
//! ```
//! `benches/openapi-import/run.sh` runs it on the pinned documents and rewrites the import section of
//! `docs/benchmarks.md`.

mod serve;

use opkit::OperationRegistry;
use opkit_adapters::openapi::{OpenApiImporter, OpenApiOptions};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One measurement in this process; prints `ms peak_kb operations skipped`.
fn one(mode: &str, path: &str) {
    let baseline = status_kb("VmRSS:");
    if mode == "serve" {
        return serve::serve(path, baseline, status_kb);
    }
    let start = Instant::now();
    let text = std::fs::read_to_string(path).expect("read the document");
    // The import alone (before `register_into`): time and peak.
    let mut split: Option<(f64, u64)> = None;
    let (operations, skipped) = match mode {
        "openapiv3" => {
            let parsed: Result<openapiv3::OpenAPI, String> = if text.trim_start().starts_with('{') {
                serde_json::from_str(&text).map_err(|e| e.to_string())
            } else {
                serde_norway::from_str(&text).map_err(|e| e.to_string())
            };
            match parsed {
                Ok(api) => {
                    let count = api.operations().count();
                    std::hint::black_box(&api);
                    (count, 0)
                }
                Err(error) => {
                    println!("error {}", error.replace('\n', " "));
                    return;
                }
            }
        }
        "import" => {
            let importer =
                OpenApiImporter::new(OpenApiOptions::new("api").base_url("http://127.0.0.1:9"));
            let import = importer.import_str(&text).expect("import");
            let imported = start.elapsed();
            let imported_peak = status_kb("VmHWM:").saturating_sub(baseline);
            let skipped = import.skipped.len();
            let registry = OperationRegistry::new();
            let ids = import.register_into(&registry).expect("register");
            split = Some((imported.as_secs_f64() * 1000.0, imported_peak));
            (ids.len(), skipped)
        }
        other => panic!("unknown mode {other}"),
    };
    let elapsed = start.elapsed();
    let peak = status_kb("VmHWM:").saturating_sub(baseline);
    let (import_ms, import_peak) = split.unwrap_or((0.0, 0));
    println!(
        "ok {:.1} {} {} {} {:.1} {}",
        elapsed.as_secs_f64() * 1000.0,
        peak,
        operations,
        skipped,
        import_ms,
        import_peak
    );
}

/// The outcome of one child.
enum Outcome {
    Done {
        ms: f64,
        peak_kb: u64,
        operations: usize,
        skipped: usize,
        /// The import alone (before registering): time and peak.
        import_ms: f64,
        import_peak_kb: u64,
    },
    Failed(String),
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn child_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn run_child(mode: &str, path: &str) -> Outcome {
    let (line, status) = match child_line(mode, path) {
        Ok(done) => done,
        Err(message) => return Outcome::Failed(message),
    };
    let mut parts = line.split_whitespace();
    match parts.next() {
        Some("ok") => {
            let mut next = || parts.next().unwrap_or("0").to_owned();
            Outcome::Done {
                ms: next().parse().unwrap_or(0.0),
                peak_kb: next().parse().unwrap_or(0),
                operations: next().parse().unwrap_or(0),
                skipped: next().parse().unwrap_or(0),
                import_ms: next().parse().unwrap_or(0.0),
                import_peak_kb: next().parse().unwrap_or(0),
            }
        }
        Some("error") => Outcome::Failed(line[6..].chars().take(80).collect()),
        _ => Outcome::Failed(format!("exited with {status}")),
    }
}

/// Runs one measurement in a child; its last line of output and its exit status, or why it
/// was killed.
fn child_line(mode: &str, path: &str) -> Result<(String, std::process::ExitStatus), String> {
    let timeout = Duration::from_secs(env_u64("IMPORT_TIMEOUT_SECS", 300));
    let max_rss_kb = env_u64("IMPORT_MAX_RSS_MB", 8000) * 1024;
    let exe = std::env::current_exe().expect("current exe");
    let mut child = Command::new(exe)
        .args(["one", mode, path])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    let mut max_seen = 0;
    let verdict = loop {
        if let Ok(Some(_)) = child.try_wait() {
            break None;
        }
        let rss = child_rss_kb(child.id());
        max_seen = max_seen.max(rss);
        if rss > max_rss_kb {
            break Some(format!(
                "killed at {:.0} s, {:.1} GB resident",
                start.elapsed().as_secs_f64(),
                rss as f64 / 1048576.0
            ));
        }
        if start.elapsed() > timeout {
            break Some(format!(
                "killed at {:.0} s, {:.1} GB resident",
                timeout.as_secs_f64(),
                max_seen as f64 / 1048576.0
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if let Some(message) = verdict {
        let _ = child.kill();
        let _ = child.wait();
        return Err(message);
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    let status = child.wait().expect("wait");
    Ok((out.lines().last().unwrap_or("").to_owned(), status))
}

/// `serve` on each document, one child each: import + register, every tool listed over MCP,
/// every operation called once, every validator (input and output) compiled.
fn serve_table(documents: &[String]) {
    println!(
        "| document | size | operations | tools listed (pages) | `tools/list` bytes | import + register | list | calls | every validator | total | peak memory |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for document in documents {
        let (name, path) = document.split_once('=').expect("name=path");
        let size_kb = std::fs::metadata(path).map(|m| m.len() / 1024).unwrap_or(0);
        let row = match child_line("serve", path) {
            Ok((line, status)) => {
                let parts: Vec<&str> = line.split_whitespace().collect();
                if parts.first() != Some(&"ok") || parts.len() < 11 {
                    format!("exited with {status}")
                } else {
                    let num = |i: usize| parts[i].parse::<f64>().unwrap_or(0.0);
                    format!(
                        "{} | {} ({}) | {:.1} MB | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {}",
                        parts[3],
                        parts[4],
                        parts[5],
                        num(6) / 1048576.0,
                        num(7),
                        num(8),
                        num(9),
                        num(10),
                        num(1),
                        mb(num(2) as u64)
                    )
                }
            }
            Err(message) => format!("— | — | — | — | — | — | — | {message} | —"),
        };
        println!("| {name} | {} | {row} |", mb(size_kb));
    }
}

/// The best of `runs` children (lowest time; lowest peak).
fn best(mode: &str, path: &str, runs: u64) -> Outcome {
    let mut best: Option<Outcome> = None;
    for _ in 0..runs {
        let outcome = run_child(mode, path);
        best = match (best, outcome) {
            (None, outcome) => Some(outcome),
            (Some(Outcome::Failed(_)), Outcome::Failed(message)) => {
                return Outcome::Failed(message);
            }
            (Some(Outcome::Failed(message)), _) | (_, Outcome::Failed(message)) => {
                return Outcome::Failed(message);
            }
            (
                Some(Outcome::Done {
                    ms,
                    peak_kb,
                    operations,
                    skipped,
                    import_ms,
                    import_peak_kb,
                }),
                Outcome::Done {
                    ms: ms2,
                    peak_kb: peak2,
                    import_ms: import_ms2,
                    import_peak_kb: import_peak2,
                    ..
                },
            ) => Some(Outcome::Done {
                ms: ms.min(ms2),
                peak_kb: peak_kb.min(peak2),
                operations,
                skipped,
                import_ms: import_ms.min(import_ms2),
                import_peak_kb: import_peak_kb.min(import_peak2),
            }),
        };
    }
    best.unwrap_or(Outcome::Failed("no run".into()))
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

fn table(documents: &[String]) {
    let runs = env_u64("IMPORT_RUNS", 3);
    println!(
        "| document | size | operations (skipped) | `openapiv3` parse | import + register | × `openapiv3` | of which import | peak memory | × document size | peak of the import alone | peak of the `openapiv3` parse |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for document in documents {
        let (name, path) = document.split_once('=').expect("name=path");
        let size_kb = std::fs::metadata(path).map(|m| m.len() / 1024).unwrap_or(0);
        let parse = best("openapiv3", path, runs);
        let import = best("import", path, runs);
        let parse_ms = match &parse {
            Outcome::Done { ms, .. } => Some(*ms),
            Outcome::Failed(_) => None,
        };
        let parse_cell = match &parse {
            Outcome::Done { ms, .. } => format!("{ms:.0} ms"),
            Outcome::Failed(message) => format!("fails ({message})"),
        };
        let parse_peak = match &parse {
            Outcome::Done { peak_kb, .. } => mb(*peak_kb),
            Outcome::Failed(_) => "—".to_owned(),
        };
        match import {
            Outcome::Done {
                ms,
                peak_kb,
                operations,
                skipped,
                import_ms,
                import_peak_kb,
            } => println!(
                "| {name} | {} | {operations} ({skipped}) | {parse_cell} | {ms:.0} ms | {} | {import_ms:.0} ms | {} | {:.2}× | {} | {parse_peak} |",
                mb(size_kb),
                parse_ms.map_or("—".into(), |p| format!("{:.2}×", ms / p)),
                mb(peak_kb),
                peak_kb as f64 / size_kb.max(1) as f64,
                mb(import_peak_kb)
            ),
            Outcome::Failed(message) => println!(
                "| {name} | {} | — | {parse_cell} | {message} | — | — | — | — | — | {parse_peak} |",
                mb(size_kb)
            ),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("one") if args.len() == 3 => one(&args[1], &args[2]),
        Some("table") => table(&args[1..]),
        Some("serve-table") => serve_table(&args[1..]),
        _ => {
            eprintln!(
                "usage: openapi_import table NAME=PATH... | serve-table NAME=PATH... | one (openapiv3|import|serve) PATH"
            );
            std::process::exit(2);
        }
    }
}
