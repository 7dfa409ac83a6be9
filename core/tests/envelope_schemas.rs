//! The published JSON Schemas of the envelope and its metas accept real envelopes and reject
//! malformed ones.

use opkit::envelope::{
    envelope_schema, http_meta_schema, local_envelope, local_meta_schema, mcp_meta_schema,
    response_meta_schema,
};
use opkit::schema::CompiledSchema;
use serde_json::json;

#[test]
fn envelope_schema_accepts_envelopes_and_rejects_malformed_ones() {
    let schema = CompiledSchema::compile(&envelope_schema()).expect("compiles");
    let envelope = serde_json::to_value(local_envelope(json!({"x": 1}), "a.b")).unwrap();
    assert!(schema.is_valid(&envelope));
    assert!(schema.is_valid(&json!({"data": 1, "meta": {"source": "mcp", "isError": true, "content": [{"type": "text", "text": "no"}]}})));
    assert!(!schema.is_valid(&json!({"data": 1, "meta": {"source": "ftp"}})));
    assert!(!schema.is_valid(&json!({"data": 1, "meta": null})));
    assert!(!schema.is_valid(&json!([1])));
}

#[test]
fn meta_schemas_describe_their_variants() {
    let meta = CompiledSchema::compile(&response_meta_schema()).unwrap();
    assert!(meta.is_valid(&json!({"source": "http", "statusCode": 200, "headers": {"a": "b"}, "contentType": "text/plain"})));
    assert!(!meta.is_valid(&json!({"source": "http", "statusCode": 200})));

    let local = CompiledSchema::compile(&local_meta_schema()).unwrap();
    assert!(local.is_valid(&json!({"operationId": "a.b", "timestamp": 3})));
    assert!(!local.is_valid(&json!({"operationId": "a.b", "timestamp": "3"})));

    let http = CompiledSchema::compile(&http_meta_schema()).unwrap();
    assert!(http.is_valid(&json!({"statusCode": 404, "headers": {}, "contentType": ""})));

    let mcp = CompiledSchema::compile(&mcp_meta_schema()).unwrap();
    assert!(mcp.is_valid(&json!({"isError": false, "content": [{"type": "resource_link", "uri": "u", "name": "n"}], "_meta": {}})));
    assert!(!mcp.is_valid(&json!({"isError": false, "content": [{"type": "video"}]})));
}
