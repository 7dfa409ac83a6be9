//! The module's text: a header, the runtime, each operation's types, the shared named
//! types, the `Client` interface and `createClient`, and the `Operations` map.

use super::namespaces::{Entry, Namespace};
use super::types::{TypeWriter, comment, doc_lines, pascal};
use opkit::{OperationKind, OperationSpec};
use std::fmt::Write as _;

/// The runtime every module starts with: errors, options, the caller and its SSE reader.
const RUNTIME: &str = include_str!("runtime.ts");

/// Names the runtime declares, which the schemas' named types must not take.
const RUNTIME_NAMES: [&str; 15] = [
    "Caller",
    "CallOptions",
    "Client",
    "ClientOptions",
    "Envelope",
    "ErrorCode",
    "ErrorKind",
    "EventParser",
    "HeadersOption",
    "OperationId",
    "Operations",
    "OpkitError",
    "ServerEvent",
    "createClient",
    "isOpkitError",
];

/// One operation's names in the module.
pub(super) struct Names {
    pub(super) input: String,
    pub(super) output: String,
    pub(super) errors: String,
}

/// The module for `specs` (sorted by id, none internal), and what did not map.
pub(super) fn write(specs: &[&OperationSpec]) -> (String, Vec<String>) {
    let mut writer = TypeWriter::default();
    for name in RUNTIME_NAMES {
        writer.reserve(name);
    }
    let names = operation_names(specs, &mut writer);
    let mut unmapped = Vec::new();

    let mut out = String::new();
    out.push_str(
        "// The TypeScript client of an opkit registry, written by\n\
         // opkit_adapters::client::typescript from the operations' schemas. Do not edit it:\n\
         // write it again when the operations change.\n\
         /* eslint-disable */\n\n",
    );
    out.push_str(RUNTIME);
    write_meta(&mut out, &mut writer, &mut unmapped);

    out.push_str("\n// ----- the operations' types ----------------------------------------------------------------\n");
    let mut tree = Namespace::default();
    for (spec, names) in specs.iter().zip(&names) {
        let entry = write_operation(&mut out, &mut writer, spec, names, &mut unmapped);
        tree.insert(spec.namespace.split('.').chain([spec.name.as_str()]), entry);
    }

    out.push_str("\n// ----- named types (the schemas' definitions) ------------------------------------------------\n\n");
    for (name, doc, ty) in writer.aliases() {
        let _ = writeln!(out, "{}\n", type_line(name, ty, doc));
    }
    write_client(&mut out, &tree);
    write_operations(&mut out, specs, &names);
    (out, unmapped)
}

/// `ResponseMeta` (where a result came from), among the named types.
fn write_meta(out: &mut String, writer: &mut TypeWriter, unmapped: &mut Vec<String>) {
    let meta = writer.root(
        &opkit::envelope::response_meta_schema(),
        "ResponseMeta",
        "Meta",
    );
    for what in writer.take_unmapped() {
        unmapped.push(format!("ResponseMeta: {what}"));
    }
    // The meta's schema is titled `ResponseMeta`, so it is the alias of that name.
    if meta != "ResponseMeta" {
        out.push_str("\n/** Where a result came from, tagged by `source`. */\n");
        let _ = writeln!(out, "export type ResponseMeta = {meta};");
    }
    writer.reserve("ResponseMeta");
}

/// One operation's input, output and error kind types; its entry in the client's tree.
fn write_operation(
    out: &mut String,
    writer: &mut TypeWriter,
    spec: &OperationSpec,
    names: &Names,
    unmapped: &mut Vec<String>,
) -> Entry {
    let id = spec.id();
    out.push('\n');
    let input = writer.root(spec.input_schema.as_value(), &names.input, &names.input);
    for what in writer.take_unmapped() {
        unmapped.push(format!("{id} input: {what}"));
    }
    let output = writer.root(spec.output_schema.as_value(), &names.output, &names.output);
    for what in writer.take_unmapped() {
        unmapped.push(format!("{id} output: {what}"));
    }
    let output_word = match spec.kind {
        OperationKind::Subscription => "An item",
        OperationKind::Query | OperationKind::Mutation => "Output",
    };
    let mut doc = vec![format!("Input of `{id}`.")];
    if !writer.is_alias(&input) {
        doc.extend(doc_lines(spec.input_schema.as_value()));
    }
    let _ = writeln!(out, "{}", type_line(&names.input, &input, &comment(&doc)));
    let mut doc = vec![format!("{output_word} of `{id}`.")];
    if !writer.is_alias(&output) {
        doc.extend(doc_lines(spec.output_schema.as_value()));
    }
    let _ = writeln!(out, "{}", type_line(&names.output, &output, &comment(&doc)));
    let kinds: Vec<String> = spec
        .errors
        .iter()
        .map(|kind| format!("\"{}\"", kind.as_str()))
        .collect();
    let kinds = if kinds.is_empty() {
        "never".to_owned()
    } else {
        kinds.join(" | ")
    };
    let _ = writeln!(
        out,
        "/** The error kinds `{id}` declares (documentation: others may still arrive). */\nexport type {} = {kinds};",
        names.errors
    );
    Entry {
        id,
        kind: kind_word(spec.kind),
        doc: function_doc(spec),
        input: names.input.clone(),
        input_optional: input_is_optional(spec.input_schema.as_value()),
        output: names.output.clone(),
    }
}

/// `query`, `mutation` or `subscription`.
fn kind_word(kind: OperationKind) -> &'static str {
    match kind {
        OperationKind::Query => "query",
        OperationKind::Mutation => "mutation",
        OperationKind::Subscription => "subscription",
    }
}

/// The `Client` interface and `createClient`, by namespace.
fn write_client(out: &mut String, tree: &Namespace) {
    out.push_str("\n// ----- the client ---------------------------------------------------------------------------\n\n");
    out.push_str("/** The registry's operations, by namespace. */\nexport interface Client ");
    tree.write_interface(out, 0);
    out.push_str(
        "\n\n/** A client of the registry served at `options.baseUrl`. */\n\
         export function createClient(options: ClientOptions): Client {\n  \
         const caller = new Caller(options);\n  return ",
    );
    tree.write_object(out, 1);
    out.push_str(";\n}\n");
}

/// The `Operations` map (every operation by id) and `OperationId`.
fn write_operations(out: &mut String, specs: &[&OperationSpec], names: &[Names]) {
    out.push_str(
        "\n/** Every operation by id: its kind, input, output (a subscription's item) and declared error kinds. */\n\
         export interface Operations {\n",
    );
    for (spec, names) in specs.iter().zip(names) {
        let _ = writeln!(
            out,
            "  \"{}\": {{ kind: \"{}\"; input: {}; output: {}; errors: {} }};",
            spec.id(),
            kind_word(spec.kind),
            names.input,
            names.output,
            names.errors
        );
    }
    out.push_str("}\n\n/** An operation's id. */\nexport type OperationId = keyof Operations;\n");
}

/// Each operation's type names (`NotesGetInput`, ..), distinct from each other and from the
/// runtime's, reserved in `writer` so that no definition takes them.
fn operation_names(specs: &[&OperationSpec], writer: &mut TypeWriter) -> Vec<Names> {
    let mut names = Vec::new();
    for spec in specs {
        let mut base = pascal(&spec.id());
        let output = match spec.kind {
            OperationKind::Subscription => "Item",
            _ => "Output",
        };
        let taken = |writer: &TypeWriter, base: &str| {
            ["Input", output, "ErrorKind"]
                .iter()
                .any(|suffix| writer.is_taken(&format!("{base}{suffix}")))
        };
        if taken(writer, &base) {
            let mut n = 2;
            while taken(writer, &format!("{base}{n}")) {
                n += 1;
            }
            base = format!("{base}{n}");
        }
        let entry = Names {
            input: format!("{base}Input"),
            output: format!("{base}{output}"),
            errors: format!("{base}ErrorKind"),
        };
        writer.reserve(&entry.input);
        writer.reserve(&entry.output);
        writer.reserve(&entry.errors);
        names.push(entry);
    }
    names
}

/// `export type Name = ..;`, with the schema's doc comment when it has one.
fn type_line(name: &str, ty: &str, doc: &str) -> String {
    format!("{doc}export type {name} = {ty};")
}

/// The doc comment of an operation's function: its description, the error kinds it declares
/// and who may call it.
fn function_doc(spec: &OperationSpec) -> String {
    let mut lines: Vec<String> = Vec::new();
    if let Some(description) = &spec.description {
        lines.extend(description.lines().map(str::to_owned));
    }
    if !spec.errors.is_empty() {
        let kinds: Vec<&str> = spec.errors.iter().map(|kind| kind.as_str()).collect();
        lines.push(format!(
            "@throws {{OpkitError}} with `kind` {} (declared).",
            kinds.join(", ")
        ));
    }
    let access = &spec.access;
    if !access.scopes.is_empty() {
        lines.push(format!("Needs the scopes {}.", access.scopes.join(", ")));
    }
    if !access.roles.is_empty() {
        lines.push(format!(
            "Needs one of the roles {}.",
            access.roles.join(", ")
        ));
    }
    lines.push(format!("`POST /ops/{}`", spec.id()));
    let body: Vec<String> = lines
        .iter()
        .map(|line| format!(" * {}", line.replace("*/", "*\u{2215}")))
        .collect();
    format!("/**\n{}\n */", body.join("\n"))
}

/// `true` when the input may be left out: an object schema that requires nothing.
fn input_is_optional(schema: &serde_json::Value) -> bool {
    match schema {
        serde_json::Value::Bool(true) => true,
        serde_json::Value::Object(fields) => {
            let requires = fields
                .get("required")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|names| !names.is_empty());
            !requires
                && !fields.contains_key("$ref")
                && ["anyOf", "oneOf", "allOf"]
                    .iter()
                    .all(|keyword| !fields.contains_key(*keyword))
        }
        _ => false,
    }
}
