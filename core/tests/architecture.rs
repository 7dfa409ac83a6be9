//! Keeps the crate docs' "Architecture" section true: the top-level modules of `core/src`
//! are listed there from the bottom up, and no module may name a module listed above it
//! (`crate::x`, `use crate::{x, ..}`, `$crate::x`, or a `super::` chain that climbs to the
//! crate root), nor an item the crate root re-exports from one (`crate::TypedOperation` is
//! `typed`'s). Comments, doc comments and string literals are not code and are skipped, so
//! intra-doc links may point anywhere.
//!
//! Below the root, the same reading keeps every folder acyclic: in `core`, `macros` and
//! `adapters`, no two modules of one folder may reach each other (a cycle between siblings
//! means the folder is split by verb, not by noun); and the adapters' top-level modules
//! depend on each other only along the edges [`ADAPTER_EDGES`] lists.

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
    children_named(code, &[], depth)
}

/// The leading names of `rest`: the identifier it starts with, or each item's first
/// identifier of a `{a, b::c, ..}` group.
fn leading_names(rest: &str, found: &mut BTreeSet<String>) {
    let Some(group) = rest.strip_prefix('{') else {
        found.insert(ident_at(rest).to_owned());
        return;
    };
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
}

/// The modules directly inside the module at `folder` (its path from the crate root) that
/// `code` names, for a file `depth` modules below that folder module: through
/// `crate::<folder>::x`, or a `super::` chain that climbs exactly to the folder module.
fn children_named(code: &str, folder: &[String], depth: usize) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    let prefix: String = std::iter::once("crate::".to_owned())
        .chain(folder.iter().map(|name| format!("{name}::")))
        .collect();
    for (at, _) in code.match_indices(prefix.as_str()) {
        let preceded = at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if !preceded {
            leading_names(&code[at + prefix.len()..], &mut found);
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
        if climbs == depth {
            leading_names(rest, &mut found);
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

/// The items the crate root re-exports (`pub use module::{A, b::C};`), each with the
/// top-level module it comes from.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let code = strip_non_code(lib);
    let mut found = BTreeMap::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(path) = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let path = path.trim().trim_start_matches("crate::");
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        let module = ident_at(module).to_owned();
        let items = rest.trim();
        let items = items
            .strip_prefix('{')
            .and_then(|inner| inner.strip_suffix('}'))
            .unwrap_or(items);
        for item in items.split(',') {
            // `a::B as C` names `C`; `a::B` names `B`.
            let item = item.trim();
            let name = match item.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => item.rsplit("::").next().unwrap_or(item).trim(),
            };
            let name = ident_at(name);
            if !name.is_empty() && name != "self" {
                found.insert(name.to_owned(), module.clone());
            }
        }
    }
    found
}

/// Every reference from a module to one listed above it, as "file: lower -> higher"; a
/// reference to an item the root re-exports (`reexports`) counts as one to its module.
fn violations(
    order: &[String],
    files: &BTreeMap<String, Vec<PathBuf>>,
    src: &Path,
    reexports: &BTreeMap<String, String>,
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
            for named in referenced_modules(&code, depth_of(file, src)) {
                let target = reexports.get(&named).cloned().unwrap_or(named);
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
    let reexports = root_reexports(&lib);
    let found = violations(&order, &files, &src, &reexports, |file| {
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
    let found = violations(&order, &files, src, &BTreeMap::new(), |file| {
        sources[file.to_str().unwrap()].to_owned()
    });
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("`low` (level 1) refers to `mid`"));
    assert!(found[1].contains("`high` (level 3)") && found[1].starts_with("/src/mid/mod.rs"));
    // Through a root re-export: `crate::Top` is `high`'s.
    let reexports = root_reexports("pub use high::{Top, inner::Deep as Alias};\nmod low;");
    assert_eq!(reexports["Top"], "high");
    assert_eq!(reexports["Alias"], "high");
    let sources: BTreeMap<&str, &str> = [
        ("/src/low.rs", "fn f(x: crate::Top) {}"),
        ("/src/mid/mod.rs", ""),
        ("/src/high.rs", ""),
    ]
    .into_iter()
    .collect();
    let found = violations(&order, &files, src, &reexports, |file| {
        sources[file.to_str().unwrap()].to_owned()
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("refers to `high`"), "{found:?}");
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

/// `code` without its unit tests (from the first `#[cfg(test)]` module on): a test may
/// reach anywhere.
fn without_tests(code: &str) -> &str {
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let at = from + at;
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") || after.starts_with("pub(crate) mod ") {
            return &code[..at];
        }
        from = at + 1;
    }
    code
}

/// A folder module: its path from the crate root and its children, each with its files.
struct Folder {
    path: Vec<String>,
    children: BTreeMap<String, Vec<PathBuf>>,
}

/// Every folder module under `src` (the crate root first), named as the crate names them
/// (`renamed` maps a top-level folder to the name a `#[path]` gives it).
fn folders(src: &Path, renamed: &BTreeMap<String, String>) -> Vec<(PathBuf, Folder)> {
    let mut out = Vec::new();
    let mut pending = vec![(src.to_owned(), Vec::<String>::new())];
    while let Some((dir, path)) = pending.pop() {
        let mut children: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for entry in fs::read_dir(&dir).expect("read a source folder") {
            let entry = entry.expect("a folder entry").path();
            let file_name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if entry.is_dir() {
                let mut files = Vec::new();
                rust_files(&entry, &mut files);
                if files.is_empty() {
                    continue; // assets, not modules.
                }
                let name = if path.is_empty() {
                    renamed
                        .get(&file_name)
                        .cloned()
                        .unwrap_or(file_name.clone())
                } else {
                    file_name.clone()
                };
                children.entry(name.clone()).or_default().extend(files);
                let mut below = path.clone();
                below.push(name);
                pending.push((entry, below));
            } else if let Some(stem) = file_name.strip_suffix(".rs")
                && !matches!(stem, "mod" | "lib" | "main")
            {
                children.entry(stem.to_owned()).or_default().push(entry);
            }
        }
        out.push((dir, Folder { path, children }));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// How many modules below the folder module at `dir` `file` is (`x.rs` and `x/mod.rs` are 1).
fn depth_below(file: &Path, dir: &Path) -> usize {
    depth_of(file, dir)
}

/// Which children of `folder` name which others.
fn child_edges(
    dir: &Path,
    folder: &Folder,
    read: &impl Fn(&Path) -> String,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, files) in &folder.children {
        let targets = edges.entry(name.clone()).or_default();
        for file in files {
            let code = strip_non_code(&read(file));
            for target in children_named(without_tests(&code), &folder.path, depth_below(file, dir))
            {
                if &target != name && folder.children.contains_key(&target) {
                    targets.insert(target);
                }
            }
        }
    }
    edges
}

/// The cycles of `edges` (strongly connected sets of more than one node), each sorted.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reaches = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(node) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let mut found: Vec<Vec<String>> = Vec::new();
    for node in edges.keys() {
        if found.iter().any(|cycle| cycle.contains(node)) {
            continue;
        }
        let forward = reaches(node);
        let cycle: Vec<String> = forward
            .iter()
            .filter(|other| reaches(other).contains(node))
            .cloned()
            .collect();
        if cycle.len() > 1 {
            found.push(cycle);
        }
    }
    found
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// The `#[path]` renames of a crate's top-level folders (`private/` is `__private`).
fn renamed_folders(src: &Path) -> BTreeMap<String, String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    declared_modules(&lib, src)
        .into_iter()
        .filter_map(|(name, path)| {
            let folder = path.strip_prefix(src).ok()?.components().next()?;
            let folder = folder
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned();
            (folder != name).then_some((folder, name))
        })
        .collect()
}

#[test]
fn no_folder_has_a_sibling_cycle() {
    let read = |file: &Path| fs::read_to_string(file).expect("read a source file");
    let mut found = Vec::new();
    for krate in ["core", "macros", "adapters"] {
        let src = crate_src(krate);
        for (dir, folder) in folders(&src, &renamed_folders(&src)) {
            for cycle in cycles(&child_edges(&dir, &folder, &read)) {
                found.push(format!("{}: {}", dir.display(), cycle.join(" <-> ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "modules of one folder that reach each other (split by noun, or move the shared part \
         into its own module):\n{}",
        found.join("\n")
    );
}

/// The edges allowed between the adapters' top-level modules, each with its reason. Every
/// edge (import, export, transport, server) stands alone otherwise.
const ADAPTER_EDGES: &[(&str, &str, &str)] = &[
    (
        "mcp_server",
        "http_server",
        "the MCP server is mounted on the HTTP server's front door",
    ),
    (
        "oauth",
        "http_server",
        "the OAuth resource server is an HTTP server Authenticator",
    ),
    (
        "mcp",
        "oauth",
        "the MCP import signs in with OAuth client credentials",
    ),
    ("mcp", "mcp_meta", "the _meta keys the MCP server writes"),
    (
        "mcp_server",
        "mcp_meta",
        "the _meta keys the MCP import reads",
    ),
    (
        "mcp",
        "skill_text",
        "a skill path's encoding and a SKILL.md's frontmatter block, as the server writes them",
    ),
    (
        "mcp_server",
        "skill_text",
        "a skill path's encoding and a SKILL.md's frontmatter block, as the import reads them",
    ),
    (
        "mcp",
        "redirects",
        "the redirects both imports' HTTP clients follow",
    ),
    (
        "openapi",
        "redirects",
        "the redirects both imports' HTTP clients follow",
    ),
    (
        "redis",
        "backoff",
        "the reconnection pauses both transports share",
    ),
    (
        "websocket",
        "backoff",
        "the reconnection pauses both transports share",
    ),
    (
        "http_server",
        "seeded",
        "the seeded tables of the serving and call paths",
    ),
    (
        "mcp_server",
        "seeded",
        "the seeded tables of the serving and call paths",
    ),
    (
        "redis",
        "seeded",
        "the seeded tables of the serving and call paths",
    ),
    (
        "websocket",
        "seeded",
        "the seeded tables of the serving and call paths",
    ),
];

#[test]
fn the_adapters_depend_on_each_other_only_as_allowed() {
    let src = crate_src("adapters");
    let read = |file: &Path| fs::read_to_string(file).expect("read a source file");
    let (dir, root) = folders(&src, &BTreeMap::new())
        .into_iter()
        .find(|(_, folder)| folder.path.is_empty())
        .expect("the crate root");
    let mut unexpected = Vec::new();
    for (from, targets) in child_edges(&dir, &root, &read) {
        for to in targets {
            if !ADAPTER_EDGES.iter().any(|(a, b, _)| *a == from && *b == to) {
                unexpected.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        unexpected.is_empty(),
        "adapter modules depending on each other outside ADAPTER_EDGES:\n{}",
        unexpected.join("\n")
    );
}

#[test]
fn the_folder_checks_catch_a_cycle() {
    let dir = Path::new("/src/a");
    let folder = Folder {
        path: vec!["a".to_owned()],
        children: [
            ("x", vec!["/src/a/x.rs"]),
            ("y", vec!["/src/a/y/mod.rs", "/src/a/y/deep.rs"]),
            ("z", vec!["/src/a/z.rs"]),
        ]
        .into_iter()
        .map(|(name, files)| {
            (
                name.to_owned(),
                files.into_iter().map(PathBuf::from).collect(),
            )
        })
        .collect(),
    };
    let sources: BTreeMap<&str, &str> = [
        ("/src/a/x.rs", "use super::{y::Y, w};"),
        ("/src/a/y/mod.rs", "mod deep;"),
        (
            "/src/a/y/deep.rs",
            "fn f() { crate::a::x::g() }\n#[cfg(test)]\nmod tests { use super::super::z; }",
        ),
        ("/src/a/z.rs", "// super::x in a comment\nuse super::y;"),
    ]
    .into_iter()
    .collect();
    let read = |file: &Path| sources[file.to_str().unwrap()].to_owned();
    let edges = child_edges(dir, &folder, &read);
    assert_eq!(edges["x"], BTreeSet::from(["y".to_owned()]));
    assert_eq!(
        edges["y"],
        BTreeSet::from(["x".to_owned()]),
        "tests do not count"
    );
    assert_eq!(cycles(&edges), [vec!["x".to_owned(), "y".to_owned()]]);
}
