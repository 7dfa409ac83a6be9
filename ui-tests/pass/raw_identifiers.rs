//! Parameters named with raw identifiers (`r#type`, `r#match`) are input fields named
//! `type` and `match`; a fn named `r#loop` is the operation `loop`.
use opkit::prelude::*;

#[operation(namespace = "raw")]
async fn lookup(r#type: String, r#match: Option<u32>, mut r#ref: i64) -> String {
    r#ref += 1;
    format!("{type}:{match:?}:{ref}", type = r#type, match = r#match, ref = r#ref)
}

#[operation(namespace = "raw")]
async fn r#loop(r#in: Vec<u8>) -> usize {
    r#in.len()
}

fn main() {
    let schema = lookup::spec().input_schema;
    let properties = schema["properties"].as_object().unwrap();
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["match", "ref", "type"]);
    assert_eq!(r#loop::ID, "raw.loop");
    let ctx = OperationContext::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let registry = OperationRegistry::from_inventory();
        let out = registry
            .execute("raw.lookup", serde_json::json!({"type": "user", "ref": 1}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.data, "user:None:2");
        let typed = lookup::call(&ctx, "a".into(), Some(1), 2).await.unwrap();
        assert_eq!(typed.data, "a:Some(1):3");
        let len = r#loop::call(&ctx, vec![1, 2]).await.unwrap();
        assert_eq!(len.data, 2);
    });
}
