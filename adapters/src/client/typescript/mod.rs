//! A TypeScript client generated from a registry: one self-contained module (`index.ts`)
//! that a frontend imports, with the operations' input, output and error types, one
//! function per operation grouped by namespace, and no dependency beyond `fetch`.
//!
//! ```
//! use opkit::{operation, OperationRegistry};
//! use opkit_adapters::client::typescript::TypeScriptClient;
//!
//! /// Adds two numbers.
//! #[operation(namespace = "math")]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! let registry = OperationRegistry::new();
//! registry.register_typed::<add>().unwrap();
//! let client = TypeScriptClient::from_registry(&registry);
//! assert!(client.source().contains("export type MathAddInput = "));
//! assert!(client.source().contains("add(input: MathAddInput, options?: CallOptions): Promise<Envelope<MathAddOutput>>;"));
//! assert!(client.unmapped().is_empty());
//! ```
//!
//! A frontend then calls the registry served by [`HttpServer`](crate::http_server):
//!
//! ```text
//! import { createClient, isOpkitError } from "./client";
//!
//! const client = createClient({ baseUrl: "https://example.com/api", headers: { "x-api-key": key } });
//! const { data } = await client.math.add({ a: 2, b: 40 });   // data: number
//! for await (const { data: tick } of client.clock.ticks({})) { .. }   // a subscription, over SSE
//! ```
//!
//! # The module
//!
//! - `createClient({ baseUrl, headers?, fetch? })` gives a client whose
//!   `client.<namespace>.<name>(input, { signal?, headers? })` calls `POST
//!   <baseUrl>/ops/<id>`: a query or mutation returns `Promise<Envelope<Output>>`
//!   (`{ data, meta }`, the whole [`ResponseEnvelope`](opkit::ResponseEnvelope)), a
//!   subscription an `AsyncIterable<Envelope<Item>>` read from server-sent events (leaving
//!   the loop or aborting the signal closes the stream). The input may be left out when no
//!   field of it is required. A dotted namespace nests (`client.billing.invoices.get`).
//! - A failed call throws an `OpkitError` with the wire's `code`, `kind`, `message` and
//!   `details`, the HTTP `status`, the `requestId` and `mayHaveRun` (`false` only when the
//!   server said the operation did not start: `VALIDATION_ERROR`, `ACCESS_DENIED`,
//!   `OPERATION_NOT_FOUND`). A lost connection is `TRANSPORT_ERROR`, an aborted call
//!   `ABORTED`.
//! - For each operation `<Id>` (the id in Pascal case, `notes.get` → `NotesGet`):
//!   `<Id>Input`, `<Id>Output` (`<Id>Item` for a subscription) and `<Id>ErrorKind`, the
//!   union of the error kinds it declares (`never` when none; the declaration is
//!   documentation, so other kinds may still arrive). The `Operations` interface maps each
//!   id to the four, and `ResponseMeta`, `ErrorCode` and `ErrorKind` are the wire's.
//! - The schemas' definitions (`$defs`) become named types shared by the operations that
//!   use the same definition; a different definition of the same name is prefixed with its
//!   operation's name.
//!
//! Operations whose [`AccessRule`](opkit::AccessRule) is internal are left out: no edge
//! serves them. The module is stable: the same operations give the same bytes.
//!
//! # Schemas and types
//!
//! | schema | TypeScript |
//! |---|---|
//! | `true`, `{}` | `unknown` |
//! | `false` | `never` |
//! | `"type": "string"` (a `format`, base64 bytes) | `string`, the format in the doc comment |
//! | `"type": "integer"`, `"number"` | `number` (an integer and its bounds in the doc comment) |
//! | `"type": "boolean"`, `"null"` | `boolean`, `null` |
//! | `"type": ["string", "null"]`, OpenAPI 3.0's `nullable` | `string \| null` |
//! | `const`, `enum` of strings, numbers, booleans, `null` | a literal type, a union of them |
//! | `"type": "array"` with `items` | `Array<T>` |
//! | `prefixItems` (with `items` for the rest, or `items: false`) | `[A, B?, ...Array<T>]`, `[A, B?]` (the first `minItems` required) |
//! | `"type": "object"` with `properties` and `required` | `{ a: A; b?: B }` |
//! | `additionalProperties: <schema>` | an index signature, `[key: string]: T` (with the properties' types) |
//! | an object without `properties`, `additionalProperties: true` | `[key: string]: unknown` |
//! | `anyOf`, `oneOf` | a union; `allOf`: an intersection |
//! | `$ref` to `#/$defs/<name>` (or `#/definitions/<name>`), `$ref: "#"` | the named type |
//! | object or array keywords without `type` | an object or array (as OpenAPI documents mean them) |
//!
//! An object type lists its declared properties, so TypeScript refuses an object literal
//! with others (its excess-property check), where JSON Schema accepts them unless
//! `additionalProperties` is `false`: a renamed field is a compile error in the frontend.
//! Bounds, lengths, patterns and formats are not types; they stay in doc comments. A
//! property named like a member of every JavaScript object (`toString`, `constructor`)
//! with a type that is not a function makes TypeScript refuse `{}` for that type.
//!
//! The JSON-Schema-Test-Suite's valid instances (draft 2020-12) check this: read as JSON
//! Schema reads schemas ([`TypeScriptTypes::strict`]), all 741 typecheck as literals of
//! their schema's type but 2, refused by the excess-property check; read as the client
//! reads them (object keywords without `type` mean an object), 15 more are refused, each
//! a non-object instance of such a schema (`adapters/tests/typescript_client`).
//!
//! What does not map becomes `unknown` (or the part of it that maps, which admits every
//! value the schema does) and is named in [`TypeScriptClient::unmapped`]: `enum` and `const`
//! values that are objects or arrays, `not`, `if`/`then`/`else`, `dependentSchemas`,
//! `patternProperties` (the object's index signature becomes `unknown`), references other
//! than to the schema's own definitions, and schemas nested deeper than 64 levels.

mod module;
mod namespaces;
mod types;

use opkit::{OperationRegistry, OperationSpec};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A TypeScript client module for a set of operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeScriptClient {
    source: String,
    unmapped: Vec<String>,
}

impl TypeScriptClient {
    /// The client of every operation of `registry` that an edge serves (all but the
    /// internal ones).
    pub fn from_registry(registry: &OperationRegistry) -> Self {
        Self::from_specs(registry.specs().iter().map(|spec| &**spec))
    }

    /// The client of these operations (the internal ones left out), in id order whatever
    /// the order given.
    pub fn from_specs<'a>(specs: impl IntoIterator<Item = &'a OperationSpec>) -> Self {
        let mut specs: Vec<&OperationSpec> = specs
            .into_iter()
            .filter(|spec| !spec.access.is_internal())
            .collect();
        specs.sort_by_key(|spec| spec.id());
        specs.dedup_by_key(|spec| spec.id());
        let (source, unmapped) = module::write(&specs);
        Self { source, unmapped }
    }

    /// The module's text (TypeScript, `index.ts`).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// What of the operations' schemas did not map to a type, one line each
    /// (`notes.search input: \`not\``); empty when everything did.
    pub fn unmapped(&self) -> &[String] {
        &self.unmapped
    }

    /// Writes the module to `<dir>/index.ts` (creating `dir`), and returns that path.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("index.ts");
        std::fs::write(&path, &self.source)?;
        Ok(path)
    }
}

/// TypeScript declarations for schemas of your own: `export type <Name> = ..;` for each,
/// with their definitions as named types, mapped as the [module docs](self) say.
///
/// ```
/// use opkit_adapters::client::typescript::TypeScriptTypes;
/// use serde_json::json;
///
/// let mut types = TypeScriptTypes::new();
/// types.add("Point", &json!({
///     "type": "object",
///     "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
///     "required": ["x", "y"]
/// }));
/// assert_eq!(
///     types.declarations(),
///     "export type Point = {\n  x: number;\n  y: number;\n};\n"
/// );
/// ```
pub struct TypeScriptTypes {
    writer: types::TypeWriter,
    declared: Vec<(String, String, String)>,
    unmapped: Vec<String>,
}

impl Default for TypeScriptTypes {
    fn default() -> Self {
        Self::new()
    }
}

impl TypeScriptTypes {
    /// Declarations that read object and array keywords without `type` as an object or an
    /// array, as the client does.
    pub fn new() -> Self {
        Self::with_writer(types::TypeWriter::default())
    }

    /// Declarations that read a schema without `type` as JSON Schema does: its object and
    /// array keywords constrain objects and arrays only, and any other value is valid (such
    /// a schema becomes `unknown`).
    pub fn strict() -> Self {
        Self::with_writer(types::TypeWriter::strict())
    }

    fn with_writer(writer: types::TypeWriter) -> Self {
        Self {
            writer,
            declared: Vec::new(),
            unmapped: Vec::new(),
        }
    }

    /// Declares `name` (a TypeScript identifier) as the type of `schema`, a whole schema
    /// (its `$ref`s point into its own `$defs`, or at `#` for itself).
    pub fn add(&mut self, name: &str, schema: &Value) -> &mut Self {
        self.writer.reserve(name);
        let ty = self.writer.root(schema, name, name);
        let doc = types::doc_comment(schema);
        self.declared.push((name.to_owned(), doc, ty));
        for what in self.writer.take_unmapped() {
            self.unmapped.push(format!("{name}: {what}"));
        }
        self
    }

    /// The declarations: the added types in the order added, then their definitions by name.
    pub fn declarations(&self) -> String {
        let mut out = String::new();
        for (name, doc, ty) in &self.declared {
            out.push_str(&format!("{doc}export type {name} = {ty};\n"));
        }
        for (name, doc, ty) in self.writer.aliases() {
            out.push_str(&format!("{doc}export type {name} = {ty};\n"));
        }
        out
    }

    /// What did not map, one line each (`Name: \`not\``).
    pub fn unmapped(&self) -> &[String] {
        &self.unmapped
    }
}
