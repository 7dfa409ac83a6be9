//! Keeps the crate docs' "Architecture" section true: the top-level modules of `core/src`
//! are listed there from the bottom up, and no module may name a module listed above it
//! (`crate::x`, `use crate::{x, ..}`, `$crate::x`, or a `super::` chain that climbs to the
//! crate root). Comments, doc comments and string literals are not code and are skipped, so
//! intra-doc links may point anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The modules named by the numbered list of the `## Architecture` section of `lib.rs`,
/// bottom first.
fn documented_order(lib: &str) -> Vec<String> {
    let mut order = Vec::new();
    let mut inside = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with("## ") {
            inside = doc == "## Architecture";
            continue;
        }
        if !inside {
            continue;
        }
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let name: String = rest
            .trim_start_matches(['[', '`'])
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        assert!(
            !name.is_empty(),
            "an Architecture item names no module: {line}"
        );
        order.push(name);
    }
    order
}

/// The top-level modules `lib.rs` declares, with the file or folder each lives in.
fn declared_modules(lib: &str, src: &Path) -> BTreeMap<String, PathBuf> {
    let mut modules = BTreeMap::new();
    let mut path_attr: Option<String> = None;
    for line in strip_non_code(lib).lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("#[path = \"") {
            path_attr = rest.split('"').next().map(str::to_owned);
            continue;
        }
        let rest = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            .or_else(|| line.strip_prefix("pub(crate) mod "));
        let Some(rest) = rest else {
            if !line.starts_with("#[") {
                path_attr = None;
            }
            continue;
        };
        let Some(name) = rest.strip_suffix(';') else {
            continue; // an inline module (`prelude`) is part of the root.
        };
        let path = match path_attr.take() {
            // `#[path = "x/mod.rs"]`: the module is the whole folder.
            Some(file) if file.ends_with("mod.rs") => src.join(file).parent().unwrap().to_owned(),
            Some(file) => src.join(file),
            None if src.join(name).is_dir() => src.join(name),
            None => src.join(format!("{name}.rs")),
        };
        modules.insert(name.to_owned(), path);
    }
    modules
}

/// `source` with comments, string and char literals blanked (newlines kept).
fn strip_non_code(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !ident_before(&chars, i) {
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some('\n') => out.push('\n'),
                    _ => {}
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): skip only the former.
            let end = if next == Some('\\') {
                (i + 2..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')
            } else {
                (chars.get(i + 2) == Some(&'\'')).then_some(i + 2)
            };
            match end {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

fn ident_at(code: &str) -> &str {
    let end = code
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(code.len());
    &code[..end]
}

/// The top-level modules `code` names, for a file `depth` modules below the crate root.
fn referenced_modules(code: &str, depth: usize) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    for (at, _) in code.match_indices("crate::") {
        let preceded = at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if preceded {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut level = 0;
            let mut item_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => break,
                    '}' => level -= 1,
                    ',' if level == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        found.insert(ident_at(&group[k..]).to_owned());
                        item_start = false;
                    }
                    c if c.is_whitespace() => {}
                    _ => item_start = false,
                }
            }
        } else {
            found.insert(ident_at(rest).to_owned());
        }
    }
    for (at, _) in code.match_indices("super::") {
        if at > 0 && code[..at].ends_with("super::") {
            continue; // counted from the first `super` of the chain.
        }
        let mut rest = &code[at..];
        let mut climbs = 0;
        while let Some(after) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = after;
        }
        if climbs >= depth {
            found.insert(ident_at(rest).to_owned());
        }
    }
    found
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in fs::read_dir(path).expect("read a source folder") {
            rust_files(&entry.expect("a folder entry").path(), out);
        }
    } else if path.extension().is_some_and(|ext| ext == "rs") {
        out.push(path.to_owned());
    }
}

/// How many modules below the crate root `file` is (`x.rs` and `x/mod.rs` are 1).
fn depth_of(file: &Path, src: &Path) -> usize {
    let relative = file.strip_prefix(src).expect("a file under src");
    let parts = relative.components().count();
    if file.file_name().is_some_and(|name| name == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// Every reference from a module to one listed above it, as "file: lower -> higher".
fn violations(
    order: &[String],
    files: &BTreeMap<String, Vec<PathBuf>>,
    src: &Path,
    read: impl Fn(&Path) -> String,
) -> Vec<String> {
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, name)| (name.as_str(), i))
        .collect();
    let mut found = Vec::new();
    for (name, files) in files {
        for file in files {
            let code = strip_non_code(&read(file));
            for target in referenced_modules(&code, depth_of(file, src)) {
                let (Some(&from), Some(&to)) = (rank.get(name.as_str()), rank.get(target.as_str()))
                else {
                    continue;
                };
                if to > from {
                    found.push(format!(
                        "{}: `{name}` (level {}) refers to `{target}` (level {}), which is above it",
                        file.display(),
                        from + 1,
                        to + 1
                    ));
                }
            }
        }
    }
    found
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_documented_order_lists_every_module_once() {
    let src = src_dir();
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let order = documented_order(&lib);
    assert!(
        order.len() > 5,
        "lib.rs has no `## Architecture` list: {order:?}"
    );
    let listed: BTreeSet<&String> = order.iter().collect();
    assert_eq!(
        listed.len(),
        order.len(),
        "a module is listed twice: {order:?}"
    );
    let declared = declared_modules(&lib, &src);
    let declared_names: BTreeSet<&String> = declared.keys().collect();
    assert_eq!(
        listed, declared_names,
        "the Architecture section and the modules lib.rs declares differ"
    );
    for path in declared.values() {
        assert!(path.exists(), "{} does not exist", path.display());
    }
}

#[test]
fn no_module_refers_to_a_module_above_it() {
    let src = src_dir();
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let order = documented_order(&lib);
    let files = declared_modules(&lib, &src)
        .into_iter()
        .map(|(name, path)| {
            let mut files = Vec::new();
            rust_files(&path, &mut files);
            files.sort();
            (name, files)
        })
        .collect();
    let found = violations(&order, &files, &src, |file| {
        fs::read_to_string(file).expect("read a source file")
    });
    assert!(
        found.is_empty(),
        "module references against the order in lib.rs's Architecture section:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_catches_an_upward_reference() {
    let src = Path::new("/src");
    let order = vec!["low".to_owned(), "mid".to_owned(), "high".to_owned()];
    let files: BTreeMap<String, Vec<PathBuf>> = [
        ("low", "/src/low.rs"),
        ("mid", "/src/mid/mod.rs"),
        ("high", "/src/high.rs"),
    ]
    .into_iter()
    .map(|(name, path)| (name.to_owned(), vec![PathBuf::from(path)]))
    .collect();
    let sources: BTreeMap<&str, &str> = [
        (
            "/src/low.rs",
            "//! [`crate::high`] in a doc is fine.\nconst S: &str = \"crate::high\";\nuse crate::mid::X;",
        ),
        ("/src/mid/mod.rs", "use crate::{low, high::Y};"),
        ("/src/high.rs", "use super::low::Z; use crate::mid;"),
    ]
    .into_iter()
    .collect();
    let found = violations(&order, &files, src, |file| {
        sources[file.to_str().unwrap()].to_owned()
    });
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("`low` (level 1) refers to `mid`"));
    assert!(found[1].contains("`high` (level 3)") && found[1].starts_with("/src/mid/mod.rs"));
    // The parts the real check is built from.
    assert_eq!(
        referenced_modules(
            &strip_non_code("fn f<'a>(x: &'a str) { let c = '\"'; crate::high::g() }"),
            1
        ),
        BTreeSet::from(["high".to_owned()])
    );
    assert_eq!(
        referenced_modules("super::super::high::X", 2),
        BTreeSet::from(["high".to_owned()])
    );
    assert!(referenced_modules("super::sibling::X", 2).is_empty());
    assert_eq!(
        documented_order(
            "//! ## Architecture\n//! 1. `low`: a\n//! 2. [`mid`]: b\n//! ## Next\n//! 3. `no`"
        ),
        ["low", "mid"]
    );
}
