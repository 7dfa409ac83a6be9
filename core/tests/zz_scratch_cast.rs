#![allow(missing_docs, dead_code)]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Inner { x: i32, label: Option<String> }
#[derive(Serialize, Deserialize, JsonSchema)]
enum Shape { Empty, Circle { r: f64 }, Square(f64), Pair(u8, u8) }
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(default)]
struct Defaults { a: u32, b: String }
impl Default for Defaults { fn default() -> Self { Self { a: 7, b: "hi".into() } } }
#[derive(Serialize, Deserialize, JsonSchema)]
struct Outer { inner: Inner, opt_inner: Option<Inner>, list: Vec<Inner>, map: HashMap<String, u16>, shape: Shape, #[serde(default)] d: Defaults, t: (u8, String), tag: Tagged, arr: [u8; 3], uniq: std::collections::BTreeSet<i64>, flag: Option<bool> }
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
enum Tagged { A { v: i32 }, B }
#[derive(Serialize, Deserialize, JsonSchema)]
struct Node { children: Vec<Node>, next: Option<Box<Node>> }

#[test]
fn dump() {
    println!("{}", serde_json::to_string_pretty(&schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<Outer>().to_value()).unwrap());
    println!("{}", serde_json::to_string_pretty(&schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<Node>().to_value()).unwrap());
    println!("{}", serde_json::to_string_pretty(&{let mut s = schemars::generate::SchemaSettings::draft2020_12(); s.contract = schemars::generate::Contract::Deserialize; s.into_generator().into_root_schema_for::<Outer>().to_value()}).unwrap());
}
