//! opkit side by side with the frameworks users would pick instead (issue 9).
//!
//! Every bench runs on a tokio `current_thread` runtime. A future is first polled once in
//! place (no scheduler cost when it is ready at once, as direct calls are) and handed to
//! `block_on` only when it is pending, so all frameworks pay the same driving cost.
//! Inputs are built outside the timed section (`with_inputs`). Stream benches consume
//! `ITEMS` items per iteration: divide by `ITEMS` for a per-item figure (`run.sh` does).

use divan::Bencher;
use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub};
use opkit_benches::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio::runtime::Runtime;

/// Items per stream iteration.
const ITEMS: u32 = 1000;

fn main() {
    divan::main();
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Polls `fut` once in place; drives it on `rt` only when it is pending.
fn run<F: Future>(rt: &Runtime, fut: F) -> F::Output {
    let _entered = rt.enter();
    let mut fut = pin!(fut);
    if let Poll::Ready(output) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        return output;
    }
    rt.block_on(fut)
}

/// Every operation, behind one middleware that does nothing but pass the call on: what one
/// middleware costs a call.
fn noop_middleware_registry() -> OperationRegistry {
    OperationRegistry::from_inventory().with_middleware(opkit::middleware::from_fn(
        |call, next: opkit::middleware::Next| next.run(call),
    ))
}

fn validator_for<T: schemars::JsonSchema>() -> jsonschema::Validator {
    let schema = serde_json::to_value(schemars::schema_for!(T)).expect("schema");
    jsonschema::validator_for(&schema).expect("validator")
}

/// A served registry over a `MemoryPubSub`, and a caller.
fn memory_protocol(rt: &Runtime) -> (PendingRequestMap, Box<dyn std::any::Any>) {
    rt.block_on(async {
        let registry = OperationRegistry::from_inventory();
        let bus: Arc<dyn PubSub> = Arc::new(MemoryPubSub::new());
        let handle = CallHandler::new(registry, bus.clone())
            .spawn()
            .await
            .expect("handler");
        let map = PendingRequestMap::connect(bus).await.expect("caller");
        (map, Box::new(handle) as Box<dyn std::any::Any>)
    })
}

fn tarpc_client(rt: &Runtime) -> BenchServiceClient {
    use tarpc::server::Channel;
    rt.block_on(async {
        let (client_side, server_side) = tarpc::transport::channel::unbounded();
        let server = tarpc::server::BaseChannel::with_defaults(server_side);
        tokio::spawn(
            server
                .execute(TarpcServer.serve())
                .for_each(|call| async move {
                    tokio::spawn(call);
                }),
        );
        BenchServiceClient::new(tarpc::client::Config::default(), client_side).spawn()
    })
}

fn graphql_request(query: &str, variables: Value) -> async_graphql::Request {
    async_graphql::Request::new(query).variables(async_graphql::Variables::from_json(variables))
}

/// `add(a, b) -> {sum}`.
#[divan::bench_group(sample_count = 100, sample_size = 500)]
mod tiny {
    use super::*;

    #[divan::bench]
    fn direct_typed(bencher: Bencher) {
        let rt = runtime();
        bencher
            .with_inputs(|| (2i64, 40i64))
            .bench_local_values(|(a, b)| run(&rt, add(a, b)));
    }

    #[divan::bench]
    fn direct_typed_plus_envelope(bencher: Bencher) {
        let rt = runtime();
        bencher
            .with_inputs(|| (2i64, 40i64))
            .bench_local_values(|(a, b)| {
                let data = run(&rt, add(a, b));
                opkit::envelope::local_envelope(data, add::ID)
            });
    }

    #[divan::bench]
    fn json_floor(bencher: Bencher) {
        let rt = runtime();
        bencher.with_inputs(tiny_json).bench_local_values(|input| {
            let input = AddIn::deserialize(&input).expect("input");
            let output = run(&rt, add(input.a, input.b));
            serde_json::to_value(output).expect("output")
        });
    }

    #[divan::bench]
    fn json_floor_jsonschema(bencher: Bencher) {
        let rt = runtime();
        let validator = validator_for::<AddIn>();
        bencher.with_inputs(tiny_json).bench_local_values(|input| {
            assert!(validator.is_valid(&input));
            let input = AddIn::deserialize(&input).expect("input");
            let output = run(&rt, add(input.a, input.b));
            serde_json::to_value(output).expect("output")
        });
    }

    #[divan::bench]
    fn opkit_execute(bencher: Bencher) {
        let rt = runtime();
        let registry = OperationRegistry::from_inventory();
        let ctx = OperationContext::default();
        bencher.with_inputs(tiny_json).bench_local_values(|input| {
            run(&rt, registry.execute(add::ID, input, &ctx)).expect("execute")
        });
    }

    #[divan::bench]
    fn opkit_typed_call(bencher: Bencher) {
        let rt = runtime();
        let ctx = OperationContext::default();
        bencher
            .with_inputs(|| (2i64, 40i64))
            .bench_local_values(|(a, b)| run(&rt, add::call(&ctx, a, b)).expect("call"));
    }

    #[divan::bench]
    fn opkit_execute_noop_middleware(bencher: Bencher) {
        let rt = runtime();
        let registry = noop_middleware_registry();
        let ctx = OperationContext::default();
        bencher.with_inputs(tiny_json).bench_local_values(|input| {
            run(&rt, registry.execute(add::ID, input, &ctx)).expect("execute")
        });
    }

    #[divan::bench]
    fn opkit_typed_call_noop_middleware(bencher: Bencher) {
        let rt = runtime();
        let ctx = noop_middleware_registry().context();
        bencher
            .with_inputs(|| (2i64, 40i64))
            .bench_local_values(|(a, b)| run(&rt, add::call(&ctx, a, b)).expect("call"));
    }

    #[divan::bench]
    fn opkit_protocol_memory(bencher: Bencher) {
        let rt = runtime();
        let (map, _handle) = memory_protocol(&rt);
        let ctx = OperationContext::default();
        bencher
            .with_inputs(tiny_json)
            .bench_local_values(|input| run(&rt, map.call(add::ID, input, &ctx)).expect("call"));
    }

    #[divan::bench]
    fn jsonrpsee_raw_json_request(bencher: Bencher) {
        let rt = runtime();
        let module = jsonrpc::module();
        let request = jsonrpc::request("add", tiny_json());
        bencher
            .with_inputs(|| request.clone())
            .bench_local_values(|request| {
                run(&rt, module.raw_json_request(&request, 1))
                    .expect("request")
                    .0
            });
    }

    #[divan::bench]
    fn tarpc_channel(bencher: Bencher) {
        let rt = runtime();
        let client = tarpc_client(&rt);
        bencher
            .with_inputs(|| (2i64, 40i64))
            .bench_local_values(|(a, b)| {
                run(&rt, client.add(tarpc::context::current(), a, b)).expect("tarpc")
            });
    }

    #[divan::bench]
    fn async_graphql_execute(bencher: Bencher) {
        let rt = runtime();
        let schema = graphql::schema();
        let check = run(
            &rt,
            schema.execute(graphql_request(graphql::TINY, tiny_json())),
        );
        assert!(check.errors.is_empty(), "{:?}", check.errors);
        bencher
            .with_inputs(|| graphql_request(graphql::TINY, tiny_json()))
            .bench_local_values(|request| run(&rt, schema.execute(request)));
    }
}

/// 10 input fields with a nested object and a 20-item array; similar output.
#[divan::bench_group(sample_count = 100, sample_size = 100)]
mod medium {
    use super::*;

    #[divan::bench]
    fn direct_typed(bencher: Bencher) {
        let rt = runtime();
        bencher
            .with_inputs(medium_typed)
            .bench_local_values(|input| run(&rt, medium(Input(input))));
    }

    #[divan::bench]
    fn direct_typed_plus_envelope(bencher: Bencher) {
        let rt = runtime();
        bencher
            .with_inputs(medium_typed)
            .bench_local_values(|input| {
                let data = run(&rt, medium(Input(input)));
                opkit::envelope::local_envelope(data, opkit_benches::medium::ID)
            });
    }

    #[divan::bench]
    fn json_floor(bencher: Bencher) {
        let rt = runtime();
        bencher
            .with_inputs(medium_json)
            .bench_local_values(|input| {
                let input = MediumIn::deserialize(&input).expect("input");
                let output = run(&rt, medium(Input(input)));
                serde_json::to_value(output).expect("output")
            });
    }

    #[divan::bench]
    fn json_floor_jsonschema(bencher: Bencher) {
        let rt = runtime();
        let validator = validator_for::<MediumIn>();
        bencher
            .with_inputs(medium_json)
            .bench_local_values(|input| {
                assert!(validator.is_valid(&input));
                let input = MediumIn::deserialize(&input).expect("input");
                let output = run(&rt, medium(Input(input)));
                serde_json::to_value(output).expect("output")
            });
    }

    #[divan::bench]
    fn opkit_execute(bencher: Bencher) {
        let rt = runtime();
        let registry = OperationRegistry::from_inventory();
        let ctx = OperationContext::default();
        bencher
            .with_inputs(medium_json)
            .bench_local_values(|input| {
                run(
                    &rt,
                    registry.execute(opkit_benches::medium::ID, input, &ctx),
                )
                .expect("execute")
            });
    }

    #[divan::bench]
    fn opkit_typed_call(bencher: Bencher) {
        let rt = runtime();
        let ctx = OperationContext::default();
        bencher
            .with_inputs(medium_typed)
            .bench_local_values(|input| {
                run(&rt, opkit_benches::medium::call(&ctx, Input(input))).expect("call")
            });
    }

    #[divan::bench]
    fn opkit_execute_noop_middleware(bencher: Bencher) {
        let rt = runtime();
        let registry = noop_middleware_registry();
        let ctx = OperationContext::default();
        bencher
            .with_inputs(medium_json)
            .bench_local_values(|input| {
                run(
                    &rt,
                    registry.execute(opkit_benches::medium::ID, input, &ctx),
                )
                .expect("execute")
            });
    }

    #[divan::bench]
    fn opkit_typed_call_noop_middleware(bencher: Bencher) {
        let rt = runtime();
        let ctx = noop_middleware_registry().context();
        bencher
            .with_inputs(medium_typed)
            .bench_local_values(|input| {
                run(&rt, opkit_benches::medium::call(&ctx, Input(input))).expect("call")
            });
    }

    #[divan::bench]
    fn opkit_protocol_memory(bencher: Bencher) {
        let rt = runtime();
        let (map, _handle) = memory_protocol(&rt);
        let ctx = OperationContext::default();
        bencher
            .with_inputs(medium_json)
            .bench_local_values(|input| {
                run(&rt, map.call(opkit_benches::medium::ID, input, &ctx)).expect("call")
            });
    }

    #[divan::bench]
    fn jsonrpsee_raw_json_request(bencher: Bencher) {
        let rt = runtime();
        let module = jsonrpc::module();
        let request = jsonrpc::request("medium", medium_json());
        bencher
            .with_inputs(|| request.clone())
            .bench_local_values(|request| {
                run(&rt, module.raw_json_request(&request, 1))
                    .expect("request")
                    .0
            });
    }

    #[divan::bench]
    fn tarpc_channel(bencher: Bencher) {
        let rt = runtime();
        let client = tarpc_client(&rt);
        bencher
            .with_inputs(medium_typed)
            .bench_local_values(|input| {
                run(&rt, client.medium(tarpc::context::current(), input)).expect("tarpc")
            });
    }

    #[divan::bench]
    fn async_graphql_execute(bencher: Bencher) {
        let rt = runtime();
        let schema = graphql::schema();
        let variables = || json!({"input": medium_json()});
        let check = run(
            &rt,
            schema.execute(graphql_request(graphql::MEDIUM, variables())),
        );
        assert!(check.errors.is_empty(), "{:?}", check.errors);
        bencher
            .with_inputs(|| graphql_request(graphql::MEDIUM, variables()))
            .bench_local_values(|request| run(&rt, schema.execute(request)));
    }
}

/// `ITEMS` tiny items per iteration.
#[divan::bench_group(sample_count = 100, sample_size = 3)]
mod stream {
    use super::*;

    #[divan::bench]
    fn json_floor(bencher: Bencher) {
        let rt = runtime();
        bencher.bench_local(|| {
            run(&rt, async {
                let mut items = pin!(item_stream(ITEMS));
                let mut n = 0usize;
                while let Some(item) = items.next().await {
                    n += divan::black_box(serde_json::to_value(item).expect("item")).is_object()
                        as usize;
                }
                n
            })
        });
    }

    #[divan::bench]
    fn opkit_subscribe(bencher: Bencher) {
        let rt = runtime();
        let registry = OperationRegistry::from_inventory();
        let ctx = OperationContext::default();
        bencher.bench_local(|| {
            run(&rt, async {
                let mut items = registry
                    .subscribe(items::ID, json!({"count": ITEMS}), &ctx)
                    .await
                    .expect("subscribe");
                let mut n = 0usize;
                while let Some(item) = items.next().await {
                    n += divan::black_box(item.expect("item")).data.is_object() as usize;
                }
                n
            })
        });
    }

    #[divan::bench]
    fn opkit_subscribe_noop_middleware(bencher: Bencher) {
        let rt = runtime();
        let registry = noop_middleware_registry();
        let ctx = OperationContext::default();
        bencher.bench_local(|| {
            run(&rt, async {
                let mut items = registry
                    .subscribe(items::ID, json!({"count": ITEMS}), &ctx)
                    .await
                    .expect("subscribe");
                let mut n = 0usize;
                while let Some(item) = items.next().await {
                    n += divan::black_box(item.expect("item")).data.is_object() as usize;
                }
                n
            })
        });
    }

    #[divan::bench]
    fn opkit_typed_subscribe(bencher: Bencher) {
        let rt = runtime();
        let ctx = OperationContext::default();
        bencher.bench_local(|| {
            run(&rt, async {
                let mut items = pin!(items::subscribe(&ctx, ITEMS));
                let mut n = 0usize;
                while let Some(item) = items.next().await {
                    n += (divan::black_box(item.expect("item")).data.sum >= 0) as usize;
                }
                n
            })
        });
    }

    #[divan::bench]
    fn jsonrpsee_subscription(bencher: Bencher) {
        let rt = runtime();
        let module = jsonrpc::module();
        bencher.bench_local(|| {
            run(&rt, async {
                let mut sub = module
                    .subscribe_unbounded("sub_items", [ITEMS])
                    .await
                    .expect("subscribe");
                let mut n = 0usize;
                for _ in 0..ITEMS {
                    let (item, _id) = sub.next::<Sum>().await.expect("item").expect("item");
                    n += (divan::black_box(item).sum >= 0) as usize;
                }
                n
            })
        });
    }

    #[divan::bench]
    fn async_graphql_subscription(bencher: Bencher) {
        let rt = runtime();
        let schema = graphql::schema();
        bencher.bench_local(|| {
            run(&rt, async {
                let mut items =
                    schema.execute_stream(graphql_request(graphql::ITEMS, json!({"n": ITEMS})));
                let mut n = 0usize;
                while let Some(response) = items.next().await {
                    n += divan::black_box(response).errors.is_empty() as usize;
                }
                assert_eq!(n, ITEMS as usize);
                n
            })
        });
    }
}

/// Round trips through a real `redis-server` (`REDIS_URL`; `run.sh` starts one), one call
/// at a time on both sides. `raw_stream_round_trip` is the equal-work peer of issue 36 (the
/// stream and consumer group opkit's transport uses; `raw_pubsub_round_trip` is two
/// `PUBLISH`es).
#[divan::bench_group(sample_count = 100, sample_size = 20)]
mod redis_rt {
    use super::*;
    use opkit_adapters::redis::RedisPubSub;

    fn url() -> Option<String> {
        std::env::var("REDIS_URL").ok()
    }

    #[divan::bench]
    fn raw_pubsub_round_trip(bencher: Bencher) {
        let Some(url) = url() else { return };
        let rt = runtime();
        let (mut replies, publisher) = rt.block_on(async {
            let client = redis::Client::open(url.as_str()).expect("client");
            // The responder: echoes every request to the reply channel.
            let mut requests = client.get_async_pubsub().await.expect("pubsub");
            requests.subscribe("raw:req").await.expect("subscribe");
            let mut responder = client
                .get_multiplexed_async_connection()
                .await
                .expect("conn");
            tokio::spawn(async move {
                let mut requests = requests.into_on_message();
                while let Some(message) = requests.next().await {
                    let payload: Vec<u8> = message.get_payload().expect("payload");
                    let _: () = redis::AsyncCommands::publish(&mut responder, "raw:resp", payload)
                        .await
                        .expect("publish");
                }
            });
            let mut replies = client.get_async_pubsub().await.expect("pubsub");
            replies.subscribe("raw:resp").await.expect("subscribe");
            let publisher = client
                .get_multiplexed_async_connection()
                .await
                .expect("conn");
            (replies.into_on_message(), publisher)
        });
        let mut publisher = publisher;
        let payload = tiny_json().to_string();
        bencher.bench_local(|| {
            run(&rt, async {
                let _: () = redis::AsyncCommands::publish(&mut publisher, "raw:req", &payload)
                    .await
                    .expect("publish");
                replies
                    .next()
                    .await
                    .expect("reply")
                    .get_payload_bytes()
                    .len()
            })
        });
    }

    /// The equal-work peer (issue 36): a raw redis-rs request/reply through a stream and a
    /// consumer group (`XADD` → `XREADGROUP` by a worker → `PUBLISH` of the reply + `XACK`),
    /// the primitive opkit's transport uses for competing consumers.
    #[divan::bench]
    fn raw_stream_round_trip(bencher: Bencher) {
        use opkit_benches::redis_stream::{StreamCaller, spawn_worker};
        let Some(url) = url() else { return };
        let rt = runtime();
        let (caller, worker) = rt.block_on(async {
            let stream = "raw-bench:round-trip";
            let worker = spawn_worker(&url, stream).await;
            (StreamCaller::connect(&url, stream).await, worker)
        });
        assert_eq!(run(&rt, caller.add(2, 40)), 42, "warm-up call");
        bencher.bench_local(|| run(&rt, caller.add(2, 40)));
        worker.abort();
    }

    #[divan::bench]
    fn opkit_protocol_redis(bencher: Bencher) {
        let Some(url) = url() else { return };
        let rt = runtime();
        let (map, _handle) = rt.block_on(async {
            let serving: Arc<dyn PubSub> =
                Arc::new(RedisPubSub::connect(&url).await.expect("redis"));
            let calling: Arc<dyn PubSub> =
                Arc::new(RedisPubSub::connect(&url).await.expect("redis"));
            let handle = CallHandler::new(OperationRegistry::from_inventory(), serving)
                .spawn()
                .await
                .expect("handler");
            let map = PendingRequestMap::connect(calling).await.expect("caller");
            (map, handle)
        });
        let ctx = OperationContext::default();
        // Let the handler's group readers start.
        run(&rt, map.call(add::ID, tiny_json(), &ctx)).expect("warm-up call");
        bencher
            .with_inputs(tiny_json)
            .bench_local_values(|input| run(&rt, map.call(add::ID, input, &ctx)).expect("call"));
    }

    /// `opkit_protocol_redis` with query redelivery off (entries read with `NOACK`, nothing to
    /// acknowledge): the cost of redelivery on one server.
    #[divan::bench]
    fn opkit_protocol_redis_no_redelivery(bencher: Bencher) {
        let Some(url) = url() else { return };
        let rt = runtime();
        let (map, _handle) = rt.block_on(async {
            let serving: Arc<dyn PubSub> =
                Arc::new(RedisPubSub::connect(&url).await.expect("redis"));
            let calling: Arc<dyn PubSub> =
                Arc::new(RedisPubSub::connect(&url).await.expect("redis"));
            let handle = CallHandler::new(OperationRegistry::from_inventory(), serving)
                .with_query_redelivery(false)
                .spawn()
                .await
                .expect("handler");
            let map = PendingRequestMap::connect(calling).await.expect("caller");
            (map, handle)
        });
        let ctx = OperationContext::default();
        run(&rt, map.call(add::ID, tiny_json(), &ctx)).expect("warm-up call");
        bencher
            .with_inputs(tiny_json)
            .bench_local_values(|input| run(&rt, map.call(add::ID, input, &ctx)).expect("call"));
    }

    /// The nodes of the Redis Cluster of the cluster benches (`REDIS_CLUSTER_NODES`,
    /// comma-separated `redis://` URLs; `run.sh` starts a 3-master cluster).
    fn cluster_nodes() -> Option<Vec<String>> {
        let nodes = std::env::var("REDIS_CLUSTER_NODES").ok()?;
        Some(nodes.split(',').map(str::to_owned).collect())
    }

    /// Raw redis-rs on the cluster: `SPUBLISH` → sharded subscriber → `SPUBLISH` back, through
    /// the cluster client (RESP3 pushes), the same shape as `raw_pubsub_round_trip`.
    #[divan::bench]
    fn raw_cluster_round_trip(bencher: Bencher) {
        let Some(nodes) = cluster_nodes() else { return };
        let rt = runtime();
        let (mut replies, mut publisher) = rt.block_on(async {
            use redis::cluster::ClusterClientBuilder;
            let plain = ClusterClientBuilder::new(nodes.clone())
                .build()
                .expect("cluster");
            let mut responder = plain.get_async_connection().await.expect("conn");
            let publisher = plain.get_async_connection().await.expect("conn");
            let (requests_tx, mut requests) = tokio::sync::mpsc::unbounded_channel();
            let (replies_tx, replies) = tokio::sync::mpsc::unbounded_channel();
            let subscriber = |sender: tokio::sync::mpsc::UnboundedSender<redis::PushInfo>| {
                ClusterClientBuilder::new(nodes.clone())
                    .use_protocol(redis::ProtocolVersion::RESP3)
                    .push_sender(sender)
                    .build()
                    .expect("cluster")
            };
            let mut on_requests = subscriber(requests_tx)
                .get_async_connection()
                .await
                .expect("conn");
            on_requests
                .ssubscribe("{raw:req}")
                .await
                .expect("ssubscribe");
            let mut on_replies = subscriber(replies_tx)
                .get_async_connection()
                .await
                .expect("conn");
            on_replies
                .ssubscribe("{raw:resp}")
                .await
                .expect("ssubscribe");
            // The responder: echoes every request to the reply channel.
            tokio::spawn(async move {
                let _keep = on_requests;
                while let Some(push) = requests.recv().await {
                    if push.kind != redis::PushKind::SMessage {
                        continue;
                    }
                    let Some(redis::Value::BulkString(payload)) = push.data.get(1).cloned() else {
                        continue;
                    };
                    let _: () = redis::cmd("SPUBLISH")
                        .arg("{raw:resp}")
                        .arg(payload)
                        .query_async(&mut responder)
                        .await
                        .expect("spublish");
                }
            });
            let replies = SmessageReplies {
                pushes: replies,
                _subscriber: on_replies,
            };
            (replies, publisher)
        });
        let payload = tiny_json().to_string();
        bencher.bench_local(|| {
            run(&rt, async {
                let _: () = redis::cmd("SPUBLISH")
                    .arg("{raw:req}")
                    .arg(&payload)
                    .query_async(&mut publisher)
                    .await
                    .expect("spublish");
                replies.next_message().await
            })
        });
    }

    /// The reply pushes of the raw cluster bench (and the connection that receives them).
    struct SmessageReplies {
        pushes: tokio::sync::mpsc::UnboundedReceiver<redis::PushInfo>,
        _subscriber: redis::cluster_async::ClusterConnection,
    }

    impl SmessageReplies {
        async fn next_message(&mut self) -> usize {
            loop {
                let push = self.pushes.recv().await.expect("reply");
                if push.kind == redis::PushKind::SMessage {
                    return push.data.len();
                }
            }
        }
    }

    /// The opkit call protocol over `RedisPubSub` on the cluster.
    #[divan::bench]
    fn opkit_protocol_redis_cluster(bencher: Bencher) {
        let Some(nodes) = cluster_nodes() else { return };
        let rt = runtime();
        let (map, _handle) = rt.block_on(async {
            let serving: Arc<dyn PubSub> = Arc::new(
                RedisPubSub::connect_cluster(&nodes)
                    .await
                    .expect("redis cluster"),
            );
            let calling: Arc<dyn PubSub> = Arc::new(
                RedisPubSub::connect_cluster(&nodes)
                    .await
                    .expect("redis cluster"),
            );
            let handle = CallHandler::new(OperationRegistry::from_inventory(), serving)
                .spawn()
                .await
                .expect("handler");
            let map = PendingRequestMap::connect(calling).await.expect("caller");
            (map, handle)
        });
        let ctx = OperationContext::default();
        run(&rt, map.call(add::ID, tiny_json(), &ctx)).expect("warm-up call");
        bencher
            .with_inputs(tiny_json)
            .bench_local_values(|input| run(&rt, map.call(add::ID, input, &ctx)).expect("call"));
    }
}

/// Reading one reply of the call protocol, as a caller does once per call (issue 49): opkit's
/// decoder (`CallEvent::from_slice`) against serde_json reading the same bytes into a
/// `Value`, the JSON floor.
#[divan::bench_group(sample_count = 100, sample_size = 20)]
mod wire_decode {
    use super::*;
    use opkit::protocol::CallEvent;

    fn reply() -> Vec<u8> {
        let envelope = opkit::envelope::local_envelope(json!({"sum": 42}), "bench.add");
        CallEvent::responded("caller-0123456789abcdef:1", envelope)
            .to_bytes()
            .expect("encode")
            .to_vec()
    }

    #[divan::bench]
    fn opkit_reply(bencher: Bencher) {
        let bytes = reply();
        bencher.bench(|| CallEvent::from_slice(divan::black_box(&bytes)).expect("decode"));
    }

    #[divan::bench]
    fn json_floor_reply(bencher: Bencher) {
        let bytes = reply();
        bencher.bench(|| serde_json::from_slice::<Value>(divan::black_box(&bytes)).expect("parse"));
    }
}

/// `GET /openapi.json` of a registry of 100 operations of the medium bench's shape, through
/// `HttpServer::router` in process (no sockets): as served, the document kept since the
/// registry last changed (`served`; `served_gzip` with `Accept-Encoding: gzip`, its gzipped
/// form kept too), against what each request did before it was kept (`built_per_request`:
/// `HttpServer::openapi` written as JSON).
#[divan::bench_group(sample_count = 20, sample_size = 5)]
mod openapi_document {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use opkit::{Handler, OperationSpec};
    use opkit_adapters::http_server::HttpServer;
    use tower::ServiceExt;

    const OPERATIONS: usize = 100;

    fn server() -> HttpServer {
        let shape = OperationRegistry::new();
        shape.register_operation(medium).expect("register");
        let medium = shape.specs().pop().expect("the medium operation");
        let registry = OperationRegistry::new();
        for i in 0..OPERATIONS {
            let mut spec = OperationSpec::clone(&medium);
            spec.name = format!("medium{i}");
            let echo = Handler::unary(|input, _ctx| async move { Ok(input) });
            registry.register(spec, echo).expect("register");
        }
        HttpServer::new(registry)
    }

    fn get(rt: &Runtime, router: &axum::Router, encoding: &str) -> bytes::Bytes {
        let request = Request::get("/openapi.json")
            .header("accept-encoding", encoding)
            .body(Body::empty())
            .expect("request");
        run(rt, async {
            let response = router.clone().oneshot(request).await.expect("infallible");
            assert!(response.status().is_success(), "{}", response.status());
            axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("body")
        })
    }

    #[divan::bench(args = ["identity", "gzip"])]
    fn served(bencher: Bencher, encoding: &str) {
        let rt = runtime();
        let router = server().router();
        get(&rt, &router, encoding);
        bencher.bench_local(|| get(&rt, &router, encoding));
    }

    #[divan::bench]
    fn built_per_request(bencher: Bencher) {
        let server = server();
        bencher.bench_local(|| serde_json::to_vec(&server.openapi()).expect("write"));
    }
}

/// What `HttpServer::compression_level` chooses between: a 20 KB JSON answer (200 records of
/// a list endpoint's shape, in its envelope) gzipped by `flate2` at gzip's levels 1, 6 and 9
/// (`CompressionLevel::{Fastest, Default, Best}`): 19,156 bytes to 2,432, 2,287 and 2,286.
#[divan::bench_group(sample_count = 50, sample_size = 20)]
mod gzip_level {
    use super::*;
    use std::io::Write;

    fn answer() -> Vec<u8> {
        let items: Vec<Value> = (0..200)
            .map(|i| {
                json!({
                    "id": i,
                    "name": format!("user {i}"),
                    "email": format!("user{i}@example.com"),
                    "active": i % 3 == 0,
                    "tags": ["a", "b", format!("t{i}")],
                })
            })
            .collect();
        let envelope =
            json!({"data": items, "meta": {"source": "local", "operationId": "users.list"}});
        serde_json::to_vec(&envelope).expect("answer")
    }

    fn gzip(body: &[u8], level: u32) -> Vec<u8> {
        let mut encoder =
            flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        encoder.write_all(body).expect("write");
        encoder.finish().expect("finish")
    }

    #[divan::bench(args = [1, 6, 9])]
    fn level(bencher: Bencher, level: u32) {
        let body = answer();
        bencher.bench(|| gzip(divan::black_box(&body), level));
    }
}

/// Round trips over WebSocket on loopback, one call at a time on both sides: opkit's call
/// protocol through a `WsHub` and two `WsSpoke`s (one serving, one calling, all in this
/// process), vs a raw `tokio-tungstenite` client and server exchanging the add as JSON text
/// (`raw_round_trip`, one hop) and the same relayed through a raw hub (`raw_relay_round_trip`,
/// the two hops of an opkit call: the equal-work peer of issue 36).
#[divan::bench_group(sample_count = 100, sample_size = 20)]
mod websocket_rt {
    use super::*;
    use futures::SinkExt;
    use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::Message;

    /// The raw server's answer to one `{"a":..,"b":..}` text message: `{"sum":..}`.
    fn answer(request: &str) -> String {
        let input: AddIn = serde_json::from_str(request).expect("add input");
        serde_json::to_string(&Sum {
            sum: input.a + input.b,
        })
        .expect("sum")
    }

    #[divan::bench]
    fn raw_round_trip(bencher: Bencher) {
        let rt = runtime();
        let (mut client, server) = rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let address = listener.local_addr().expect("address");
            // The server: one connection, each text message answered with the sum.
            let server = tokio::spawn(async move {
                let (stream, _) = listener.accept().await.expect("accept");
                let mut socket = tokio_tungstenite::accept_async(stream)
                    .await
                    .expect("handshake");
                while let Some(Ok(message)) = socket.next().await {
                    let Message::Text(request) = message else {
                        continue;
                    };
                    let reply = Message::text(answer(request.as_str()));
                    if socket.send(reply).await.is_err() {
                        break;
                    }
                }
            });
            // Plain `connect_async`, as opkit's spokes connect (neither side sets `TCP_NODELAY`).
            let (client, _) = tokio_tungstenite::connect_async(format!("ws://{address}/"))
                .await
                .expect("client handshake");
            (client, server)
        });
        let request = tiny_json().to_string();
        bencher.bench_local(|| {
            run(&rt, async {
                client
                    .send(Message::text(request.as_str()))
                    .await
                    .expect("send");
                let reply = client.next().await.expect("reply").expect("frame");
                let sum: Sum = serde_json::from_str(reply.to_text().expect("text")).expect("sum");
                sum.sum
            })
        });
        drop(client);
        server.abort();
    }

    /// The equal-work peer (issue 36): a raw tokio-tungstenite request/reply relayed through a
    /// hub (caller → hub → server → hub → caller, routed by request id), the two hops of an
    /// opkit call.
    #[divan::bench]
    fn raw_relay_round_trip(bencher: Bencher) {
        use opkit_benches::ws_relay::{RelayCaller, spawn_hub, spawn_server};
        let rt = runtime();
        let (caller, server) = rt.block_on(async {
            let hub = spawn_hub().await;
            let server = spawn_server(hub).await;
            (RelayCaller::connect(hub).await, server)
        });
        assert_eq!(run(&rt, caller.add(2, 40)), 42, "warm-up call");
        bencher.bench_local(|| run(&rt, caller.add(2, 40)));
        drop(caller);
        server.abort();
    }

    #[divan::bench]
    fn opkit_round_trip(bencher: Bencher) {
        let rt = runtime();
        let (map, hub, serving, handle) = rt.block_on(async {
            let tokens = StaticTokens::new()
                .with_token("serving-token", SpokeGrant::service("serving"))
                .with_token("calling-token", SpokeGrant::new("calling"));
            let hub = WsHub::bind("127.0.0.1:0", tokens).await.expect("hub");
            let serving = Arc::new(
                WsSpoke::connect(&hub.url(), "serving-token")
                    .await
                    .expect("serving spoke"),
            );
            let handle = CallHandler::new(OperationRegistry::from_inventory(), serving.clone())
                .spawn()
                .await
                .expect("handler");
            let calling = Arc::new(
                WsSpoke::connect(&hub.url(), "calling-token")
                    .await
                    .expect("calling spoke"),
            );
            let map = PendingRequestMap::connect(calling).await.expect("caller");
            (map, hub, serving, handle)
        });
        let ctx = OperationContext::default();
        run(&rt, map.call(add::ID, tiny_json(), &ctx)).expect("warm-up call");
        bencher
            .with_inputs(tiny_json)
            .bench_local_values(|input| run(&rt, map.call(add::ID, input, &ctx)).expect("call"));
        drop(map);
        drop(handle);
        serving.close();
        drop(hub);
    }
}

/// `tools/call` in process: opkit's `McpHandler` serving the registry vs an rmcp
/// `#[tool_router]` server with the same tools, each through `ServerHandler::call_tool` with
/// a `RequestContext` on a live peer (`serve_directly` over an in-memory duplex, the session
/// initialized by a 2025-11-25 client: `opkit_benches::mcp_session`). The
/// `*_rmcp_jsonschema` rows are the equal-work peer (issue 36): the rmcp server also checks
/// the arguments against the input schema, as opkit does.
#[divan::bench_group(sample_count = 100, sample_size = 200)]
mod mcp_call_tool {
    use super::*;
    use rmcp::ServerHandler;
    use rmcp::model::{CallToolRequestParams, JsonObject, NumberOrString};
    use rmcp::service::{RequestContext, RoleServer, RunningService};

    /// A running service (kept alive with its client end) whose handler is benched.
    fn running<S: ServerHandler>(
        rt: &Runtime,
        service: S,
    ) -> (RunningService<RoleServer, S>, tokio::io::DuplexStream) {
        rt.block_on(opkit_benches::mcp_session::initialized(service))
    }

    fn params(name: &'static str, input: Value) -> CallToolRequestParams {
        let Value::Object(arguments) = input else {
            panic!("object input")
        };
        CallToolRequestParams::new(name).with_arguments(JsonObject::from_iter(arguments))
    }

    fn bench<S: ServerHandler>(
        bencher: Bencher,
        service: S,
        name: &'static str,
        input: fn() -> Value,
    ) {
        let rt = runtime();
        let (running, _client) = running(&rt, service);
        let peer = running.peer().clone();
        let handler = running.service();
        bencher
            .with_inputs(|| {
                let context = RequestContext::new(NumberOrString::Number(1), peer.clone());
                (params(name, input()), context)
            })
            .bench_local_values(|(params, context)| {
                let response = run(&rt, handler.call_tool(params, context)).expect("call");
                let rmcp::model::CallToolResponse::Complete(result) = response else {
                    panic!("a complete result")
                };
                assert_ne!(result.is_error, Some(true));
                result
            });
    }

    fn opkit_handler() -> opkit_adapters::mcp_server::McpHandler {
        opkit_adapters::mcp_server::McpServer::new(OperationRegistry::from_inventory()).handler()
    }

    #[divan::bench]
    fn tiny_opkit_call_tool(bencher: Bencher) {
        bench(bencher, opkit_handler(), "bench.add", tiny_json);
    }

    #[divan::bench]
    fn tiny_rmcp_tool_router(bencher: Bencher) {
        bench(
            bencher,
            rmcp_server::RmcpBench::default(),
            "bench.add",
            tiny_json,
        );
    }

    /// The equal-work peer (issue 36): the rmcp server checking each call's arguments
    /// against the operation's input schema with a compiled `jsonschema` validator.
    #[divan::bench]
    fn tiny_rmcp_jsonschema(bencher: Bencher) {
        bench(
            bencher,
            rmcp_checked::RmcpChecked::default(),
            "bench.add",
            tiny_json,
        );
    }

    #[divan::bench]
    fn medium_opkit_call_tool(bencher: Bencher) {
        bench(bencher, opkit_handler(), "bench.medium", medium_json);
    }

    #[divan::bench]
    fn medium_rmcp_tool_router(bencher: Bencher) {
        bench(
            bencher,
            rmcp_server::RmcpBench::default(),
            "bench.medium",
            medium_json,
        );
    }

    #[divan::bench]
    fn medium_rmcp_jsonschema(bencher: Bencher) {
        bench(
            bencher,
            rmcp_checked::RmcpChecked::default(),
            "bench.medium",
            medium_json,
        );
    }
}

/// What the call spans cost (issue 23): tiny `registry.execute` with no `tracing`
/// subscriber, with a subscriber that has `opkit` turned off, and with one that records
/// opkit's spans (a `Registry` with no output layer: the span bookkeeping alone).
///
/// Run on their own (`BENCH_FILTER=tracing`): `tracing` caches each callsite's interest
/// process-wide, so the no-subscriber bench must run before any subscriber was set (divan
/// runs it first in this group; no other group sets one).
#[divan::bench_group(sample_count = 100, sample_size = 500)]
mod tracing_overhead {
    use super::*;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;

    fn execute(bencher: Bencher) {
        let rt = runtime();
        let registry = OperationRegistry::from_inventory();
        let ctx = OperationContext::default();
        bencher.with_inputs(tiny_json).bench_local_values(|input| {
            run(&rt, registry.execute(add::ID, input, &ctx)).expect("execute")
        });
    }

    #[divan::bench]
    fn a_execute_no_subscriber(bencher: Bencher) {
        execute(bencher);
    }

    #[divan::bench]
    fn b_execute_subscriber_opkit_off(bencher: Bencher) {
        let filter = Targets::new()
            .with_default(LevelFilter::TRACE)
            .with_target("opkit", LevelFilter::OFF);
        let _default =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(filter));
        execute(bencher);
    }

    #[divan::bench]
    fn c_execute_subscriber_opkit_on(bencher: Bencher) {
        let filter = Targets::new().with_default(LevelFilter::INFO);
        let _default =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(filter));
        execute(bencher);
    }
}

/// Cost growth: `execute` over inputs of 1, 10, 100 and 1,000 fields and array items, beside
/// the JSON floor for the same input (deserialize, run, serialize); the ratio should stay flat.
#[divan::bench_group(sample_count = 100)]
mod growth {
    use super::*;

    const SIZES: [usize; 4] = [1, 10, 100, 1000];

    #[divan::bench(args = SIZES)]
    fn json_floor(bencher: Bencher, n: usize) {
        bencher
            .with_inputs(|| wide_json(n))
            .bench_local_values(|input| {
                let input = WideIn::deserialize(&input).expect("input");
                serde_json::to_value(wide_sum(&input)).expect("output")
            });
    }

    #[divan::bench(args = SIZES)]
    fn opkit_execute(bencher: Bencher, n: usize) {
        let rt = runtime();
        let registry = OperationRegistry::from_inventory();
        let ctx = OperationContext::default();
        bencher
            .with_inputs(|| wide_json(n))
            .bench_local_values(|input| {
                run(&rt, registry.execute(wide::ID, input, &ctx)).expect("execute")
            });
    }
}

/// What TLS costs per connection: a spoke connecting to a hub (TCP, the WebSocket upgrade
/// with its token, the hub's welcome) and closing, over `ws://` and over `wss://` (TLS 1.3,
/// rustls, an ECDSA P-256 certificate made at start by `rcgen`); and, with `REDIS_TLS_URL`
/// and `REDIS_TLS_CA` (a TLS port of the same server as `REDIS_URL`, and its CA's PEM file),
/// a `RedisPubSub` connecting to Redis over plaintext and over TLS.
#[divan::bench_group(sample_count = 60, sample_size = 5)]
mod tls_connect {
    use super::*;
    use opkit_adapters::websocket::{
        ClientTls, HubOptions, ServerTls, SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke,
    };

    /// A hub on loopback, with TLS when `tls`; the CA's PEM is returned with it.
    fn hub(rt: &tokio::runtime::Runtime, tls: bool) -> (WsHub, String) {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress([127, 0, 0, 1].into()));
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &issuer).expect("cert");
        let mut options = HubOptions::default();
        if tls {
            let server =
                ServerTls::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes(), None)
                    .expect("server tls");
            options = options.with_tls(server);
        }
        let tokens = StaticTokens::new().with_token("token", SpokeGrant::new("spoke"));
        let hub = rt
            .block_on(WsHub::bind_with("127.0.0.1:0", tokens, options))
            .expect("hub");
        (hub, ca_cert.pem())
    }

    fn connect_and_close(bencher: Bencher, tls: bool) {
        let rt = runtime();
        let (hub, ca) = hub(&rt, tls);
        let mut options = SpokeOptions::new("token");
        if tls {
            let client = ClientTls::from_pem(Some(ca.as_bytes()), None).expect("client tls");
            options = options.with_tls(client);
        }
        let url = hub.url();
        bencher.bench_local(|| {
            run(&rt, async {
                let spoke = WsSpoke::connect_with(&url, options.clone())
                    .await
                    .expect("connect");
                spoke.close();
            })
        });
        drop(hub);
    }

    #[divan::bench]
    fn websocket_plaintext(bencher: Bencher) {
        connect_and_close(bencher, false);
    }

    #[divan::bench]
    fn websocket_tls(bencher: Bencher) {
        connect_and_close(bencher, true);
    }

    fn redis_connect(bencher: Bencher, url: &str, options: opkit_adapters::redis::RedisOptions) {
        let rt = runtime();
        bencher.bench_local(|| {
            run(&rt, async {
                let bus = opkit_adapters::redis::RedisPubSub::connect_with(url, options.clone())
                    .await
                    .expect("connect");
                drop(bus);
            })
        });
    }

    #[divan::bench]
    fn redis_plaintext(bencher: Bencher) {
        let (Ok(url), Ok(_)) = (std::env::var("REDIS_URL"), std::env::var("REDIS_TLS_URL")) else {
            return;
        };
        redis_connect(
            bencher,
            &url,
            opkit_adapters::redis::RedisOptions::default(),
        );
    }

    #[divan::bench]
    fn redis_tls(bencher: Bencher) {
        let (Ok(url), Ok(ca)) = (
            std::env::var("REDIS_TLS_URL"),
            std::env::var("REDIS_TLS_CA"),
        ) else {
            return;
        };
        let ca = std::fs::read(ca).expect("the CA file of REDIS_TLS_CA");
        let options = opkit_adapters::redis::RedisOptions::default()
            .with_tls(opkit_adapters::redis::RedisTls::new().with_ca_pem(ca));
        redis_connect(bencher, &url, options);
    }
}
