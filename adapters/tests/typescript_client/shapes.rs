//! A registry of many shapes (enums, tagged unions, recursion, maps, tuples, optional and
//! nullable fields, bytes, any JSON, nested namespaces, an operation that is also a
//! namespace, two definitions of one name, an internal operation) gives a client that
//! compiles strict, whose types take the values the operations take and refuse the
//! mistakes a frontend would make.

use super::check;
use futures::Stream;
use opkit::{AccessRule, OperationKind, OperationRegistry, OperationSpec, operation};
use opkit_adapters::client::typescript::TypeScriptClient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, JsonSchema)]
pub enum Color {
    Red,
    Green,
}

/// A shape, tagged by `kind`.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

/// A tree of labels.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Tree {
    pub label: String,
    pub children: Vec<Tree>,
}

/// Every shape at once.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Everything {
    pub count: u64,
    pub ratio: f32,
    pub flag: bool,
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    pub tags: BTreeMap<String, i32>,
    pub pair: (String, i64),
    pub bytes: Vec<u8>,
    pub color: Color,
    pub shape: Shape,
    pub tree: Tree,
    pub any: Value,
}

#[operation(namespace = "shapes")]
async fn echo(value: Everything) -> Everything {
    value
}

#[operation(namespace = "billing.invoices")]
async fn get(id: String) -> String {
    id
}

/// An operation whose name is also a namespace (`billing.invoices.get`).
#[operation(namespace = "billing")]
async fn invoices(limit: Option<u32>) -> Vec<String> {
    vec![limit.unwrap_or(0).to_string()]
}

mod one {
    /// The first `Item`.
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Item {
        pub a: String,
    }
}

mod two {
    /// The second `Item`, another shape of the same name.
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Item {
        pub b: i64,
    }
}

#[operation(namespace = "items")]
async fn first() -> one::Item {
    one::Item { a: String::new() }
}

#[operation(namespace = "items")]
async fn second() -> two::Item {
    two::Item { b: 0 }
}

#[operation(namespace = "clock", subscription)]
fn ticks(count: u32) -> impl Stream<Item = u32> + Send + 'static {
    futures::stream::iter(0..count)
}

fn client() -> TypeScriptClient {
    let registry = OperationRegistry::new();
    registry.register_typed::<echo>().expect("echo registers");
    registry.register_typed::<get>().expect("get registers");
    registry
        .register_typed::<invoices>()
        .expect("invoices registers");
    registry.register_typed::<first>().expect("first registers");
    registry
        .register_typed::<second>()
        .expect("second registers");
    registry.register_typed::<ticks>().expect("ticks registers");
    let internal = OperationSpec::new("admin", "purge", OperationKind::Mutation)
        .input_schema(json!({"type": "object"}))
        .access(AccessRule::internal());
    let specs: Vec<OperationSpec> = registry
        .specs()
        .iter()
        .map(|spec| (**spec).clone())
        .chain([internal])
        .collect();
    TypeScriptClient::from_specs(&specs)
}

/// A program using every shape, and its mistakes (each on the line after an
/// `@ts-expect-error`, which fails the compile when no error is there).
const PROGRAM: &str = r#"import { createClient, type Everything, type Shape, type Operations } from "./index";

const client = createClient({ baseUrl: "http://127.0.0.1:9" });

export async function uses(): Promise<void> {
  const value: Everything = {
    count: 3,
    ratio: 0.5,
    flag: true,
    name: null,
    tags: { a: 1, b: 2 },
    pair: ["x", 7],
    bytes: [0, 255],
    color: "Green",
    shape: { kind: "circle", radius: 2 },
    tree: { label: "root", children: [{ label: "leaf", children: [] }] },
    any: { anything: [1, "two", null] },
  };
  const { data } = await client.shapes.echo({ value });
  const shape: Shape = data.shape;
  if (shape.kind === "square") console.log(shape.side);
  const ids: string[] = (await client.billing.invoices()).data;
  const id: string = (await client.billing.invoices.get({ id: "7" })).data;
  const a: string = (await client.items.first()).data.a;
  const b: number = (await client.items.second()).data.b;
  for await (const { data: tick } of client.clock.ticks({ count: 2 })) console.log(tick + 1);
  const kind: Operations["clock.ticks"]["kind"] = "subscription";
  console.log(ids, id, a, b, kind);
}

export async function mistakes(value: Everything): Promise<void> {
  // @ts-expect-error: not a color
  value.color = "Blue";
  // @ts-expect-error: a circle has a radius, not a side
  value.shape = { kind: "circle", side: 2 };
  // @ts-expect-error: a tuple's second member is a number
  value.pair = ["x", "y"];
  // @ts-expect-error: map values are numbers
  value.tags = { a: "1" };
  // @ts-expect-error: a tree's children are trees
  value.tree = { label: "root", children: ["leaf"] };
  // @ts-expect-error: `count` is required
  const missing: Everything = { ratio: 1, flag: true, tags: {}, pair: ["x", 1], bytes: [], color: "Red", shape: { kind: "square", side: 1 }, tree: { label: "", children: [] }, any: null };
  // @ts-expect-error: an internal operation is not in the client
  await client.admin.purge({});
  console.log(missing);
}
"#;

#[test]
fn a_registry_of_many_shapes_gives_a_client_that_compiles_strict() {
    let client = client();
    let source = client.source();
    assert!(client.unmapped().is_empty(), "{:?}", client.unmapped());
    // Two definitions named `Item`: the second is prefixed with its operation's name.
    assert!(source.contains("export type Item = {"), "{source}");
    assert!(
        source.contains("export type ItemsSecondOutputItem = {"),
        "{source}"
    );
    assert!(
        !source.contains("admin.purge"),
        "internal operations are left out"
    );
    assert!(
        source.contains("pair: [string, number];"),
        "a tuple's members are all there:\n{source}"
    );

    // As written, every `@ts-expect-error` meets its error and nothing else fails.
    let diagnostics = check("shapes", &[("index.ts", source), ("program.ts", PROGRAM)]);
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");

    // Without the directives, the lines after them fail, and only those.
    let bare = PROGRAM.replace("// @ts-expect-error", "// (expected error)");
    let diagnostics = check(
        "shapes-mistakes",
        &[("index.ts", source), ("program.ts", &bare)],
    );
    let mut failed: Vec<usize> = diagnostics
        .iter()
        .map(|diagnostic| {
            assert_eq!(diagnostic.file, "program.ts", "{diagnostic:?}");
            diagnostic.line
        })
        .collect();
    failed.dedup();
    let expected: Vec<usize> = PROGRAM
        .lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with("// @ts-expect-error"))
        .map(|(index, _)| index + 2)
        .collect();
    assert_eq!(failed, expected, "{diagnostics:#?}");
}

#[test]
fn the_same_operations_give_the_same_bytes() {
    assert_eq!(client().source(), client().source());
    let registry = OperationRegistry::new();
    registry.register_typed::<ticks>().expect("registers");
    registry.register_typed::<echo>().expect("registers");
    let reversed = OperationRegistry::new();
    reversed.register_typed::<echo>().expect("registers");
    reversed.register_typed::<ticks>().expect("registers");
    assert_eq!(
        TypeScriptClient::from_registry(&registry),
        TypeScriptClient::from_registry(&reversed)
    );
}
