//! Shared fixtures for the side-by-side benchmarks: the tiny and medium operations, written
//! once as plain Rust and declared for opkit, jsonrpsee, tarpc and async-graphql; and the
//! equal-work peers of issue 36 (an input check with a compiled `jsonschema` validator, a raw
//! WebSocket relay through a hub, a raw Redis stream request/reply).

pub mod axum_peer;
pub mod mcp_session;
pub mod redis_cluster;
pub mod redis_stream;
pub mod ws_relay;

use async_graphql::{InputObject, SimpleObject};
use futures::Stream;
use opkit::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Tiny input.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AddIn {
    /// Left operand.
    pub a: i64,
    /// Right operand.
    pub b: i64,
}

/// Tiny output (also the stream item).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, SimpleObject)]
pub struct Sum {
    /// `a + b`.
    pub sum: i64,
}

/// The nested object of the medium operation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, SimpleObject, InputObject)]
#[graphql(input_name = "AddressInput")]
pub struct Address {
    /// Street.
    pub street: String,
    /// City.
    pub city: String,
    /// Postal code.
    pub zip: String,
    /// Country code.
    pub country: String,
}

/// Medium input: 10 fields, a nested object and a 20-item array.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, InputObject)]
#[graphql(name = "MediumInput")]
pub struct MediumIn {
    /// Id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Email.
    pub email: String,
    /// Age.
    pub age: u32,
    /// Active flag.
    pub active: bool,
    /// Score.
    pub score: f64,
    /// Tags.
    pub tags: Vec<String>,
    /// Address.
    pub address: Address,
    /// 20 items.
    pub items: Vec<i64>,
    /// Optional note.
    pub note: Option<String>,
}

/// Medium output: 10 fields, similar shape.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, SimpleObject)]
pub struct MediumOut {
    /// Id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Email.
    pub email: String,
    /// Age.
    pub age: u32,
    /// Active flag.
    pub active: bool,
    /// Score.
    pub score: f64,
    /// Tags.
    pub tags: Vec<String>,
    /// Address.
    pub address: Address,
    /// Sum of the items.
    pub total: i64,
    /// Number of items.
    pub count: u32,
}

/// The medium operation's work, shared by every framework.
pub fn compute(input: MediumIn) -> MediumOut {
    MediumOut {
        id: input.id,
        name: input.name,
        email: input.email,
        age: input.age,
        active: input.active,
        score: input.score,
        tags: input.tags,
        address: input.address,
        total: input.items.iter().sum(),
        count: input.items.len() as u32,
    }
}

/// The time a thread ran on a CPU (user and kernel), in nanoseconds, from its `schedstat`
/// file under `/proc` (`run_ns wait_ns timeslices`); `None` when it cannot be read.
pub fn schedstat_run_ns(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The tiny input as JSON.
pub fn tiny_json() -> Value {
    json!({"a": 2, "b": 40})
}

/// The medium input as JSON.
pub fn medium_json() -> Value {
    json!({
        "id": 12345,
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "age": 36,
        "active": true,
        "score": 98.5,
        "tags": ["math", "engines", "poetry"],
        "address": {"street": "12 St James's Square", "city": "London", "zip": "SW1Y 4JH", "country": "GB"},
        "items": (1..=20).collect::<Vec<i64>>(),
        "note": "first programmer"
    })
}

/// A compiled `jsonschema` validator for an opkit operation's input schema (the very schema
/// opkit checks every call's input against), as a user of another framework would build it
/// once to answer invalid inputs the way opkit does.
pub fn input_validator(spec: &opkit::OperationSpec) -> jsonschema::Validator {
    jsonschema::validator_for(spec.input_schema.as_value()).expect("the input schema compiles")
}

/// Checks `input` with `validator`: `Ok` when it is valid, else every violation in one message.
/// The common case (valid) costs one `is_valid` pass; the violations are collected only for
/// an invalid input.
pub fn check_input(validator: &jsonschema::Validator, input: &Value) -> Result<(), String> {
    if validator.is_valid(input) {
        return Ok(());
    }
    let violations: Vec<String> = validator
        .iter_errors(input)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    Err(violations.join("; "))
}

/// The medium input as a typed value.
pub fn medium_typed() -> MediumIn {
    serde_json::from_value(medium_json()).expect("medium input")
}

/// Tiny, as an opkit operation.
#[operation(namespace = "bench")]
pub async fn add(a: i64, b: i64) -> Sum {
    Sum { sum: a + b }
}

/// Medium, as an opkit operation.
#[operation(namespace = "bench")]
pub async fn medium(Input(input): Input<MediumIn>) -> MediumOut {
    compute(input)
}

/// Records a list answer holds ([`list_json`]): ~18 KB of JSON in opkit's envelope, what a
/// list endpoint sends a page of.
pub const LIST_COUNT: u32 = 64;

/// The input of the list operation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ListIn {
    /// How many records.
    pub count: u32,
}

/// The list input: [`LIST_COUNT`] records.
pub fn list_json() -> Value {
    json!({"count": LIST_COUNT})
}

/// `count` records of the medium output's shape, each its own (names, emails, scores and
/// tags differ): what a list endpoint answers.
pub fn records(count: u32) -> Vec<MediumOut> {
    (0..count)
        .map(|n| MediumOut {
            id: 10_000 + u64::from(n),
            name: format!("User {n}"),
            email: format!("user{n}@example.com"),
            age: 20 + n % 50,
            active: n % 3 != 0,
            score: f64::from(n) * 1.25,
            tags: vec!["member".to_owned(), format!("group-{}", n % 7)],
            address: Address {
                street: format!("{} Main Street", n + 1),
                city: ["London", "Paris", "Berlin", "Madrid"][n as usize % 4].to_owned(),
                zip: format!("{:05}", 10_000 + n * 37),
                country: ["GB", "FR", "DE", "ES"][n as usize % 4].to_owned(),
            },
            total: i64::from(n) * 210,
            count: 20,
        })
        .collect()
}

/// The list, as an opkit operation.
#[operation(namespace = "bench")]
pub async fn list(count: u32) -> Vec<MediumOut> {
    records(count)
}

/// The input of the cost-growth benches: `n` named fields and an `n`-item array.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WideIn {
    /// `n` fields, by name.
    pub fields: std::collections::BTreeMap<String, i64>,
    /// `n` items.
    pub items: Vec<i64>,
}

/// The cost-growth operation's work: a sum over every field and item.
pub fn wide_sum(input: &WideIn) -> Sum {
    Sum {
        sum: input.fields.values().sum::<i64>() + input.items.iter().sum::<i64>(),
    }
}

/// An input of `n` fields and `n` items.
pub fn wide_json(n: usize) -> Value {
    let fields: serde_json::Map<String, Value> =
        (0..n).map(|i| (format!("field{i}"), json!(i))).collect();
    json!({"fields": fields, "items": (0..n).collect::<Vec<_>>()})
}

/// The cost-growth operation, as an opkit operation.
#[operation(namespace = "bench")]
pub async fn wide(Input(input): Input<WideIn>) -> Sum {
    wide_sum(&input)
}

/// A stream of `count` tiny items, as an opkit subscription.
#[operation(namespace = "bench", subscription)]
pub fn items(count: u32) -> impl Stream<Item = Sum> + Send + 'static {
    item_stream(count)
}

/// The plain stream every framework serves.
pub fn item_stream(count: u32) -> impl Stream<Item = Sum> + Send + 'static {
    futures::stream::iter((0..count).map(|i| Sum { sum: i64::from(i) }))
}

/// The same operations as a tarpc service.
#[tarpc::service]
pub trait BenchService {
    /// Tiny.
    async fn add(a: i64, b: i64) -> Sum;
    /// Medium.
    async fn medium(input: MediumIn) -> MediumOut;
}

/// The tarpc server.
#[derive(Clone)]
pub struct TarpcServer;

impl BenchService for TarpcServer {
    async fn add(self, _: tarpc::context::Context, a: i64, b: i64) -> Sum {
        Sum { sum: a + b }
    }

    async fn medium(self, _: tarpc::context::Context, input: MediumIn) -> MediumOut {
        compute(input)
    }
}

/// The same operations as a GraphQL schema.
pub mod graphql {
    use super::*;
    use async_graphql::{EmptyMutation, Object, Schema, Subscription};

    /// Queries.
    pub struct Query;

    #[Object]
    impl Query {
        async fn add(&self, a: i64, b: i64) -> Sum {
            Sum { sum: a + b }
        }

        async fn medium(&self, input: MediumIn) -> MediumOut {
            compute(input)
        }
    }

    /// Subscriptions.
    pub struct Subs;

    #[Subscription]
    impl Subs {
        async fn items(&self, count: u32) -> impl Stream<Item = Sum> + use<> {
            item_stream(count)
        }
    }

    /// The schema.
    pub type BenchSchema = Schema<Query, EmptyMutation, Subs>;

    /// Builds the schema.
    pub fn schema() -> BenchSchema {
        Schema::new(Query, EmptyMutation, Subs)
    }

    /// The tiny query.
    pub const TINY: &str = "query($a: Int!, $b: Int!) { add(a: $a, b: $b) { sum } }";
    /// The medium query (every output field).
    pub const MEDIUM: &str = "query($input: MediumInput!) { medium(input: $input) { id name email age active score tags address { street city zip country } total count } }";
    /// The subscription.
    pub const ITEMS: &str = "subscription($n: Int!) { items(count: $n) { sum } }";
}

/// The same operations as a jsonrpsee module.
pub mod jsonrpc {
    use super::*;
    use jsonrpsee::RpcModule;
    use jsonrpsee::types::ErrorObjectOwned;

    /// Builds the module: `add`, `medium`, and the `sub_items` subscription.
    pub fn module() -> RpcModule<()> {
        let mut module = RpcModule::new(());
        module
            .register_method("add", |params, _, _| {
                let input: AddIn = params.parse()?;
                Ok::<_, ErrorObjectOwned>(Sum {
                    sum: input.a + input.b,
                })
            })
            .expect("add");
        module
            .register_method("medium", |params, _, _| {
                let input: MediumIn = params.parse()?;
                Ok::<_, ErrorObjectOwned>(compute(input))
            })
            .expect("medium");
        module
            .register_subscription(
                "sub_items",
                "item",
                "unsub_items",
                |params, pending, _, _| async move {
                    let count: u32 = params.one()?;
                    let sink = pending.accept().await?;
                    for i in 0..count {
                        let message = serde_json::value::to_raw_value(&Sum { sum: i64::from(i) })?;
                        sink.send(message).await?;
                    }
                    Ok(())
                },
            )
            .expect("sub_items");
        module
    }

    /// A JSON-RPC request string.
    pub fn request(method: &str, params: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
    }
}

/// The rmcp server a user would write instead of serving the registry: one `#[tool]` per
/// operation, the same work, `Json` outputs (structured content plus its text).
pub mod rmcp_server {
    use super::*;
    use rmcp::handler::server::tool::ToolRouter;
    use rmcp::handler::server::wrapper::{Json, Parameters};
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};

    /// The tools `add` and `medium`.
    #[derive(Clone)]
    pub struct RmcpBench {
        tool_router: ToolRouter<Self>,
    }

    impl Default for RmcpBench {
        fn default() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }
    }

    /// The router is stored and reused (not rebuilt per call).
    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for RmcpBench {}

    #[tool_router]
    impl RmcpBench {
        /// `a + b`.
        #[tool(name = "bench.add", description = "Adds two integers")]
        async fn add(&self, Parameters(input): Parameters<AddIn>) -> Json<Sum> {
            Json(Sum {
                sum: input.a + input.b,
            })
        }

        /// The medium operation.
        #[tool(name = "bench.medium", description = "The medium operation")]
        async fn medium(&self, Parameters(input): Parameters<MediumIn>) -> Json<MediumOut> {
            Json(compute(input))
        }
    }
}

/// The rmcp server with opkit's input check (issue 36): each tool takes its arguments as the
/// JSON object they arrive as, checks them against the operation's input schema with a
/// compiled `jsonschema` validator (an `invalid_params` error naming the violations when they
/// do not match), then deserializes them; it advertises the same input schemas as
/// [`rmcp_server::RmcpBench`].
pub mod rmcp_checked {
    use super::*;
    use rmcp::ErrorData;
    use rmcp::handler::server::common::schema_for_input;
    use rmcp::handler::server::tool::ToolRouter;
    use rmcp::handler::server::wrapper::{Json, Parameters};
    use rmcp::model::JsonObject;
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};
    use serde::de::DeserializeOwned;
    use std::sync::OnceLock;

    /// The tools `add` and `medium`, with their validators.
    #[derive(Clone)]
    pub struct RmcpChecked {
        tool_router: ToolRouter<Self>,
        add: &'static jsonschema::Validator,
        medium: &'static jsonschema::Validator,
    }

    /// The validators of `add` and `medium`, compiled once per process: a Streamable HTTP
    /// service makes a server per session, and per request in the stateless era, as it does
    /// for [`rmcp_server::RmcpBench`] (whose making then costs the same: its router).
    fn validators() -> &'static (jsonschema::Validator, jsonschema::Validator) {
        static VALIDATORS: OnceLock<(jsonschema::Validator, jsonschema::Validator)> =
            OnceLock::new();
        VALIDATORS.get_or_init(|| {
            (
                input_validator(&add::spec()),
                input_validator(&crate::medium::spec()),
            )
        })
    }

    impl Default for RmcpChecked {
        fn default() -> Self {
            let (add, medium) = validators();
            Self {
                tool_router: Self::tool_router(),
                add,
                medium,
            }
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for RmcpChecked {}

    /// `arguments`, checked by `validator`, as a `T`.
    fn checked<T: DeserializeOwned>(
        validator: &jsonschema::Validator,
        arguments: JsonObject,
    ) -> Result<T, ErrorData> {
        let arguments = Value::Object(arguments);
        check_input(validator, &arguments)
            .map_err(|error| ErrorData::invalid_params(error, None))?;
        T::deserialize(arguments)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))
    }

    #[tool_router]
    impl RmcpChecked {
        /// `a + b`.
        #[tool(
            name = "bench.add",
            description = "Adds two integers",
            input_schema = schema_for_input::<AddIn>().expect("schema")
        )]
        async fn add(
            &self,
            Parameters(arguments): Parameters<JsonObject>,
        ) -> Result<Json<Sum>, ErrorData> {
            let input: AddIn = checked(self.add, arguments)?;
            Ok(Json(Sum {
                sum: input.a + input.b,
            }))
        }

        /// The medium operation.
        #[tool(
            name = "bench.medium",
            description = "The medium operation",
            input_schema = schema_for_input::<MediumIn>().expect("schema")
        )]
        async fn medium(
            &self,
            Parameters(arguments): Parameters<JsonObject>,
        ) -> Result<Json<MediumOut>, ErrorData> {
            let input: MediumIn = checked(self.medium, arguments)?;
            Ok(Json(compute(input)))
        }
    }
}
