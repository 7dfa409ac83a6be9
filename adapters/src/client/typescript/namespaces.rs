//! The client's shape: operations grouped by namespace (a dotted namespace nests), written
//! once as the `Client` interface and once as the object `createClient` returns.
//!
//! An operation whose name is also a namespace (`billing.invoices` beside
//! `billing.invoices.get`) is a function that carries that namespace's members
//! (`Object.assign`), so both stay reachable by their ids.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One operation as the client shows it.
pub(super) struct Entry {
    pub(super) id: String,
    /// `query`, `mutation` or `subscription`.
    pub(super) kind: &'static str,
    /// The function's doc comment (`/** .. */`).
    pub(super) doc: String,
    pub(super) input: String,
    /// Whether the input may be left out.
    pub(super) input_optional: bool,
    pub(super) output: String,
}

/// A namespace: its operations and its nested namespaces, by name.
#[derive(Default)]
pub(super) struct Namespace {
    members: BTreeMap<String, Member>,
}

#[derive(Default)]
struct Member {
    operation: Option<Entry>,
    namespace: Namespace,
}

impl Namespace {
    /// Adds the operation at `path` (the namespace's segments, then the name).
    pub(super) fn insert<'a>(&mut self, path: impl Iterator<Item = &'a str>, entry: Entry) {
        let mut path = path.peekable();
        let mut here = self;
        while let Some(segment) = path.next() {
            let member = here.members.entry(segment.to_owned()).or_default();
            if path.peek().is_none() {
                member.operation = Some(entry);
                return;
            }
            here = &mut member.namespace;
        }
    }

    /// `{ name(input: ..): ..; nested: { .. } }`, indented `depth` levels.
    pub(super) fn write_interface(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth + 1);
        out.push_str("{\n");
        for (name, member) in &self.members {
            let key = name; // operation and namespace names are identifiers
            match &member.operation {
                Some(entry) => {
                    let _ = writeln!(out, "{pad}{}", entry.doc.replace('\n', &format!("\n{pad}")));
                    if member.namespace.members.is_empty() {
                        let _ = writeln!(out, "{pad}{key}{};", signature(entry, ": "));
                    } else {
                        let _ = write!(out, "{pad}{key}: ({}) & ", signature(entry, " => "));
                        member.namespace.write_interface(out, depth + 1);
                        out.push_str(";\n");
                    }
                }
                None => {
                    let _ = write!(out, "{pad}{key}: ");
                    member.namespace.write_interface(out, depth + 1);
                    out.push_str(";\n");
                }
            }
        }
        let _ = write!(out, "{}}}", "  ".repeat(depth));
    }

    /// `{ name: (input, options) => caller.call(..), nested: { .. } }`, indented `depth` levels.
    pub(super) fn write_object(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth + 1);
        out.push_str("{\n");
        for (name, member) in &self.members {
            let key = name; // operation and namespace names are identifiers
            let _ = write!(out, "{pad}{key}: ");
            match &member.operation {
                Some(entry) if member.namespace.members.is_empty() => {
                    out.push_str(&function(entry))
                }
                Some(entry) => {
                    let _ = write!(out, "Object.assign({}, ", function(entry));
                    member.namespace.write_object(out, depth + 1);
                    out.push(')');
                }
                None => member.namespace.write_object(out, depth + 1),
            }
            out.push_str(",\n");
        }
        let _ = write!(out, "{}}}", "  ".repeat(depth));
    }
}

/// `(input: In, options?: CallOptions)`.
fn parameters(entry: &Entry) -> String {
    let optional = if entry.input_optional { "?" } else { "" };
    format!("(input{optional}: {}, options?: CallOptions)", entry.input)
}

/// The parameters, then `arrow` and the result type.
fn signature(entry: &Entry, arrow: &str) -> String {
    format!("{}{arrow}{}", parameters(entry), result(entry))
}

fn result(entry: &Entry) -> String {
    if entry.kind == "subscription" {
        format!("AsyncIterable<Envelope<{}>>", entry.output)
    } else {
        format!("Promise<Envelope<{}>>", entry.output)
    }
}

/// The function that calls the operation.
fn function(entry: &Entry) -> String {
    let method = if entry.kind == "subscription" {
        "subscribe"
    } else {
        "call"
    };
    format!(
        "{} => caller.{method}<{}>(\"{}\", input, options)",
        parameters(entry),
        entry.output,
        entry.id
    )
}
