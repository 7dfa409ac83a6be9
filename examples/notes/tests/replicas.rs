//! Two `notes` processes share one SQLite database through the Redis call protocol: each
//! serves the operations with its own state (its own connection and name), callers reach
//! them through a real `redis-server`, and a domain error crosses the protocol unchanged.
//! Identities on the bus are signed with the processes' shared secret: a Redis writer that
//! states an identity without it is refused (it cannot run `notes.delete` as an admin, nor
//! mint identities to escape the per-caller rate limit), and the `notes call` command signs.
//! Also: a registry that lacks the state its operations read refuses to start.

mod support;

// Links the notes operations (the test names nothing else of the library).
use opkit_example_notes as _;

use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit::{ErrorCode, ErrorKind, Identity, OperationContext, OperationEnv, RegistryError};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::redis::RedisPubSub;
use opkit_testkit::redis::RedisServer;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

#[tokio::test]
async fn two_replicas_share_the_database_through_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let db_dir = support::temp_db("replicas");
    let db = db_dir.to_string_lossy().into_owned();
    let secret = support::identity_secret("replicas");
    let key = secret.path();
    let replica = |name: &'static str| {
        let (db, url, key) = (db.clone(), url.clone(), key.clone());
        async move {
            support::notes(&[
                "replica",
                "--db",
                &db,
                "--redis",
                &url,
                "--identity-secret-file",
                &key,
                "--name",
                name,
            ])
            .await
        }
    };
    let _a = replica("a").await;
    let _b = replica("b").await;

    let bus = Arc::new(RedisPubSub::connect(&url).await.expect("redis connects"));
    let env = OperationEnv::remote(PendingRequestMap::connect(bus).await.expect("a caller"));

    // Create notes until both replicas stored some (bounded): competing consumers spread
    // the mutations, each runs once.
    let mut stored_by = BTreeSet::new();
    let mut created = 0;
    while created < 200 && (stored_by.len() < 2 || created < 20) {
        let note = env
            .call("notes.create", json!({"title": format!("note {created}")}))
            .await
            .expect("notes.create over redis");
        stored_by.insert(
            note.data["stored_by"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        created += 1;
    }
    assert_eq!(
        stored_by,
        BTreeSet::from(["a".to_owned(), "b".to_owned()]),
        "both replicas served"
    );

    // Whichever replica answers sees every note: the database is shared.
    for _ in 0..4 {
        let all = env
            .call("notes.list", json!({"limit": 1000}))
            .await
            .expect("notes.list over redis");
        assert_eq!(all.data.as_array().map(Vec::len), Some(created));
    }
    let summary = env
        .call("notes.summary", json!({}))
        .await
        .expect("a nested call");
    assert_eq!(summary.data["count"], created);

    // A domain error reaches the remote caller as a local one would see it.
    let error = env
        .call("notes.get", json!({"id": 100_000}))
        .await
        .expect_err("no such note");
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert_eq!(error.kind, Some(ErrorKind::NotFound));
    assert_eq!(error.message, "there is no note 100000");
    let error = env
        .call("notes.create", json!({"title": "note 0"}))
        .await
        .expect_err("a duplicate title");
    assert_eq!(error.kind, Some(ErrorKind::Conflict));
}

#[tokio::test]
async fn a_redis_writer_cannot_state_who_it_is() {
    let redis = RedisServer::start();
    let url = redis.url();
    let db_dir = support::temp_db("stated");
    let db = db_dir.to_string_lossy().into_owned();
    let secret = support::identity_secret("stated");
    let key = secret.path();
    let _replica = support::notes(&[
        "replica",
        "--db",
        &db,
        "--redis",
        &url,
        "--identity-secret-file",
        &key,
    ])
    .await;
    let bus = Arc::new(RedisPubSub::connect(&url).await.expect("redis connects"));
    let rogue = PendingRequestMap::connect(bus).await.expect("a caller");
    let signing = opkit_example_notes::bus::caller(
        &url,
        opkit_example_notes::bus::identity_keys(&secret.bytes).unwrap(),
    )
    .await
    .expect("a signing caller");
    let admin =
        || OperationContext::new().with_identity(Identity::new("ann").with_scopes(["notes:admin"]));

    let note = signing
        .call("notes.create", json!({"title": "keep"}), &admin())
        .await
        .expect("a signed call runs");
    assert_eq!(note.data["author"], "ann", "{note:?}");
    let id = note.data["id"].clone();

    // The stated admin is refused before the operation runs; the note stays.
    let refused = rogue
        .call("notes.delete", json!({"id": id}), &admin())
        .await
        .expect_err("a stated identity");
    assert_eq!(refused.code, ErrorCode::AccessDenied, "{refused}");
    assert!(refused.message.contains("is not signed"), "{refused}");
    signing
        .call("notes.get", json!({"id": id}), &admin())
        .await
        .expect("the note is still there");

    // 150 made-up identities: every one refused, none gets a budget of its own.
    let mut denied = 0;
    for n in 0..150 {
        let ctx = OperationContext::new().with_identity(Identity::new(format!("user-{n}")));
        match rogue.call("notes.list", json!({}), &ctx).await {
            Err(error) if error.code == ErrorCode::AccessDenied => denied += 1,
            other => panic!("call {n} as a stated identity: {other:?}"),
        }
    }
    assert_eq!(denied, 150);
    // Anonymous, the rogue shares the one anonymous budget: past it, rate limited.
    let mut limited = 0;
    for _ in 0..150 {
        match rogue
            .call("notes.list", json!({}), &OperationContext::new())
            .await
        {
            Ok(_) => {}
            Err(error) if error.kind == Some(ErrorKind::RateLimited) => limited += 1,
            Err(other) => panic!("an anonymous call: {other}"),
        }
    }
    assert!(
        limited >= 50,
        "{limited} of 150 anonymous calls were rate limited"
    );

    // `notes call` signs what it sends.
    let called = support::notes(&[
        "call",
        "--redis",
        &url,
        "--identity-secret-file",
        &key,
        "--op",
        "notes.delete",
        "--input",
        &json!({"id": id}).to_string(),
        "--as",
        "ann:notes:admin",
    ])
    .await;
    let envelope: serde_json::Value = serde_json::from_str(&called.ready).unwrap();
    assert_eq!(envelope["meta"]["source"], "local", "{envelope}");
}

#[tokio::test]
async fn a_replica_without_an_identity_secret_refuses_to_start() {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(["replica", "--redis", "redis://127.0.0.1:1/"])
        .output()
        .await
        .expect("notes runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--identity-secret-file"), "{stderr}");
}

#[tokio::test]
async fn a_registry_without_its_state_refuses_to_start() {
    // Every notes operation linked, no state given.
    let registry = opkit::OperationRegistry::from_inventory();
    let error = registry.check_states().expect_err("the state is missing");
    let RegistryError::MissingState { missing } = &error else {
        panic!("MissingState, got {error}")
    };
    assert!(missing.contains(&("notes.get".to_owned(), "opkit_example_notes::db::Db")));
    assert!(
        error
            .to_string()
            .contains("operation `notes.get` needs the state `opkit_example_notes::db::Db`")
    );

    assert!(HttpServer::new(registry.clone()).try_router().is_err());
    let bus = Arc::new(opkit::MemoryPubSub::new());
    let refused = CallHandler::new(registry.clone(), bus).spawn().await;
    assert!(
        refused.is_err(),
        "a replica without its state does not start"
    );

    // A call that reaches an operation anyway names the operation and the type.
    let error = registry
        .execute("notes.get", json!({"id": 1}), &OperationContext::new())
        .await
        .expect_err("no state");
    assert!(
        error
            .message
            .contains("operation `notes.get` needs the state `opkit_example_notes::db::Db`"),
        "{}",
        error.message
    );
}
