//! Unit tests: argument parsing, name rules, shape reading, and expansion snapshots
//! (`macros/tests/expanded/*.rs`; refresh with `OPKIT_BLESS=1 cargo test -p opkit-macros`).

use crate::args;
use crate::errors::Errors;
use crate::kind::Kind;
use crate::shape::Shape;
use proc_macro2::TokenStream;
use quote::quote;

fn parse_args(tokens: TokenStream) -> (args::Args, Vec<String>) {
    let errors = Errors::new();
    let args = args::parse(tokens, &errors);
    let messages = match errors.finish() {
        Ok(()) => Vec::new(),
        Err(tokens) => tokens
            .to_string()
            .split("compile_error !")
            .skip(1)
            .map(str::to_owned)
            .collect(),
    };
    (args, messages)
}

#[test]
fn parses_every_argument() {
    let (args, errors) = parse_args(quote!(
        namespace = "a.b",
        name = "c",
        mutation,
        access(scopes = ["s:w"], roles = ["admin", "ops"]),
        crate = ::my::opkit
    ));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(args.namespace.unwrap().value(), "a.b");
    assert_eq!(args.name.unwrap().value(), "c");
    assert!(matches!(args.kind, Some((Kind::Mutation, _))));
    assert_eq!(args.scopes.len(), 1);
    assert_eq!(args.roles.len(), 2);
    assert!(args.krate.is_some());
}

#[test]
fn parses_a_tool_meta() {
    let (args, errors) = parse_args(quote!(
        namespace = "a",
        mcp(tool_meta = r#"{"ui": {"x": 1}}"#)
    ));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        args.edges.mcp.tool_meta.unwrap().value(),
        r#"{"ui": {"x": 1}}"#
    );
    for bad in ["[1]", "{\"ui\":", "\"x\""] {
        let (args, errors) = parse_args(quote!(namespace = "a", mcp(tool_meta = #bad)));
        assert!(
            args.edges.mcp.tool_meta.is_none() && !errors.is_empty(),
            "{bad}"
        );
    }
}

#[test]
fn parses_a_tool_name() {
    let (args, errors) = parse_args(quote!(namespace = "a", mcp(tool_name = "add_numbers")));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(args.edges.mcp.tool_name.unwrap().value(), "add_numbers");
    let (_, errors) = parse_args(quote!(namespace = "a", mcp(tool_name = "")));
    assert!(errors[0].contains("it is empty"), "{errors:?}");
    // The MCP server's rule, checked here rather than when the server starts.
    let (args, errors) = parse_args(quote!(namespace = "a", mcp(tool_name = "x.y-z_1")));
    assert!(
        errors.is_empty() && args.edges.mcp.tool_name.is_some(),
        "{errors:?}"
    );
    let (_, errors) = parse_args(quote!(namespace = "a", mcp(tool_name = "add numbers")));
    assert!(errors[0].contains("' ' is not allowed"), "{errors:?}");
    assert!(
        errors[0].contains("help: try") && errors[0].contains("add_numbers"),
        "{errors:?}"
    );
    let long = "x".repeat(129);
    let (_, errors) = parse_args(quote!(namespace = "a", mcp(tool_name = #long)));
    assert!(errors[0].contains("129 characters"), "{errors:?}");
}

#[test]
fn the_flat_mcp_keys_still_work_and_are_recorded_as_deprecated() {
    let (args, errors) = parse_args(quote!(namespace = "a", tool_name = "t", prompt));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(args.edges.mcp.tool_name.unwrap().value(), "t");
    let deprecated: Vec<&str> = args
        .edges
        .deprecated
        .iter()
        .map(|(_, key)| key.as_str())
        .collect();
    assert_eq!(deprecated, ["tool_name", "prompt"]);
}

#[test]
fn edge_groups_travel_as_json_and_misspelt_ones_are_refused() {
    let (args, errors) = parse_args(quote!(
        namespace = "a",
        mcp(resource = "notes://{id}", ui_hint = "card"),
        http(method = "get", path = "/notes/{id}", cache = 60),
        grpc(method = "GetNote", stream)
    ));
    assert!(errors.is_empty(), "{errors:?}");
    let groups = args.edges.json();
    assert_eq!(
        groups,
        [
            (
                "mcp".to_owned(),
                r#"{"resource":"notes://{id}","ui_hint":"card"}"#.to_owned()
            ),
            (
                "http".to_owned(),
                r#"{"cache":60,"method":"GET","path":"/notes/{id}","status":200}"#.to_owned()
            ),
            (
                "grpc".to_owned(),
                r#"{"method":"GetNote","stream":true}"#.to_owned()
            ),
        ]
    );
    // A group named like one of the attribute's own keys is a misspelling of it.
    let (_, errors) = parse_args(quote!(namespace = "a", acess(scopes = ["x"])));
    assert!(errors[0].contains("did you mean `access`"), "{errors:?}");
    let (_, errors) = parse_args(quote!(namespace = "a", mpc(prompt)));
    assert!(errors[0].contains("did you mean `mcp`"), "{errors:?}");
    // An option named like one the macro knows is a misspelling of it.
    let (_, errors) = parse_args(quote!(namespace = "a", mcp(tool_nme = "x")));
    assert!(errors[0].contains("did you mean `tool_name`"), "{errors:?}");
    let (_, errors) = parse_args(quote!(namespace = "a", http(method = "GET", pth = "/x")));
    assert!(errors[0].contains("did you mean `path`"), "{errors:?}");
}

#[test]
fn an_error_kind_written_as_its_variant_suggests_its_word() {
    for written in [quote!(NotFound), quote!(NOT_FOUND), quote!(rateLimited)] {
        let (_, errors) = parse_args(quote!(namespace = "a", errors(#written)));
        assert!(errors[0].contains("did you mean"), "{errors:?}");
    }
    let (_, errors) = parse_args(quote!(namespace = "a", errors(RateLimited)));
    assert!(errors[0].contains("`rate_limited`?"), "{errors:?}");
}

#[test]
fn reports_every_argument_problem_at_once() {
    let (_, errors) = parse_args(quote!(
        namespace = "x-y",
        nmae = "z",
        query,
        query,
        access(scope = [])
    ));
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors[0].contains("invalid namespace"));
    assert!(errors[1].contains("did you mean `name`"));
    assert!(errors[2].contains("given twice"));
    assert!(errors[3].contains("expected one of: `scopes`, `roles`"));
}

#[test]
fn suggests_valid_names() {
    assert!(args::valid_segment("_a1"));
    assert!(!args::valid_segment("1a"));
    assert!(!args::valid_segment("café"));
    assert_eq!(args::suggest_name("my-ns..x y"), "my_ns.x_y");
    assert_eq!(args::suggest_name("2fast"), "_2fast");
}

fn marker(ty: TokenStream) -> String {
    let ty: syn::Type = syn::parse2(ty).unwrap();
    Shape::of(&ty)
        .marker(&quote!(p))
        .to_string()
        .replace(' ', "")
}

#[test]
fn reads_output_shapes_from_how_types_are_written() {
    assert_eq!(marker(quote!(i64)), "p::Plain");
    assert_eq!(marker(quote!(())), "p::Plain");
    assert_eq!(marker(quote!(Result<i64, E>)), "p::Fallible<p::Plain>");
    assert_eq!(
        marker(quote!(std::io::Result<i64>)),
        "p::Fallible<p::Plain>"
    );
    assert_eq!(marker(quote!(ResponseEnvelope)), "p::Envelope");
    assert_eq!(
        marker(quote!(Result<opkit::ResponseEnvelope<u8>, E>)),
        "p::Fallible<p::Envelope>"
    );
    // A type of the user's named `Result`, without arguments, is plain data.
    assert_eq!(marker(quote!(Result)), "p::Plain");
}

/// Expands `item` under `args` and compares it, formatted by rustfmt, with the snapshot.
fn check_expansion(name: &str, args: TokenStream, item: TokenStream) {
    let expanded = crate::operation_impl(args, item, None);
    let file: syn::File = syn::parse2(expanded.clone()).expect("the expansion parses as items");
    assert!(!file.items.is_empty());
    let text = format_rust(&expanded.to_string());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/expanded")
        .join(format!("{name}.rs"));
    if std::env::var_os("OPKIT_BLESS").is_some() || !path.exists() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    assert!(
        expected == text,
        "the expansion of `{name}` changed; review it and refresh with OPKIT_BLESS=1\n{text}"
    );
}

fn format_rust(code: &str) -> String {
    use std::io::Write;
    let child =
        std::process::Command::new(std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".into()))
            .args(["--edition", "2024", "--emit", "stdout"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn();
    let Ok(mut child) = child else {
        return code.to_owned();
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(code.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    if output.status.success() {
        String::from_utf8(output.stdout).unwrap()
    } else {
        code.to_owned()
    }
}

#[test]
fn expands_a_query() {
    check_expansion(
        "query",
        quote!(namespace = "math"),
        quote! {
            /// Adds two integers.
            pub async fn add(a: i64, b: i64) -> i64 { a + b }
        },
    );
}

#[test]
fn expands_state_parameters_and_declared_errors() {
    check_expansion(
        "state",
        quote!(namespace = "notes", errors(not_found)),
        quote! {
            pub async fn get(State(db): State<Db>, ctx: &OperationContext, id: i64) -> Result<Note, CallError> {
                db.get(ctx, id).await
            }
        },
    );
}

#[test]
fn parses_the_declared_errors_and_refuses_unknown_ones() {
    let (args, errors) = parse_args(quote!(namespace = "a", errors(not_found, rate_limited)));
    assert!(errors.is_empty(), "{errors:?}");
    let names: Vec<String> = args.errors.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["NotFound", "RateLimited"]);
    let (_, errors) = parse_args(quote!(namespace = "a", errors(not_fund)));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("unknown error kind `not_fund`"),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].contains("did you mean `not_found`"),
        "{}",
        errors[0]
    );
}

#[test]
fn expands_a_subscription_borrowing_the_context() {
    check_expansion(
        "subscription",
        quote!(namespace = "clock", subscription),
        quote! {
            fn ticks(ctx: &OperationContext, count: u32) -> impl Stream<Item = Result<u32, CallError>> + Send {
                futures::stream::iter((0..count).map(Ok))
            }
        },
    );
}

#[test]
fn expands_a_whole_input_mutation() {
    check_expansion(
        "whole_input",
        quote!(
            namespace = "users",
            mutation,
            access(scopes = ["users:write"])
        ),
        quote! {
            async fn create(ctx: OperationContext, Input(user): Input<NewUser>) -> ResponseEnvelope<User> {
                todo!()
            }
        },
    );
}

/// One snapshot per accepted shape beside the four above: what `__opkit_run` does with each.
#[test]
fn expands_every_accepted_shape() {
    let cases = [
        (
            "unit_return",
            quote!(namespace = "health", mutation),
            quote!(
                pub async fn ping() {}
            ),
        ),
        (
            "std_error",
            quote!(namespace = "text"),
            quote! {
                pub async fn parse(text: String) -> Result<u32, std::num::ParseIntError> {
                    text.parse()
                }
            },
        ),
        (
            "anyhow_result",
            quote!(namespace = "files"),
            quote!(
                pub async fn load(path: String) -> anyhow::Result<String> {
                    todo!()
                }
            ),
        ),
        (
            "fallible_envelope",
            quote!(namespace = "web"),
            quote! {
                pub async fn fetch(url: String) -> Result<ResponseEnvelope<String>, CallError> {
                    todo!()
                }
            },
        ),
        (
            "borrowed_context",
            quote!(namespace = "auth"),
            quote! {
                pub async fn whoami(ctx: &OperationContext) -> Option<String> {
                    ctx.identity().map(|identity| identity.id.clone())
                }
            },
        ),
        (
            "plain_stream",
            quote!(namespace = "math", subscription),
            quote! {
                fn numbers(count: u32) -> impl Stream<Item = u32> + Send {
                    futures::stream::iter(0..count)
                }
            },
        ),
        (
            "async_stream",
            quote!(namespace = "news", subscription),
            quote! {
                async fn feed(topic: String) -> impl Stream<Item = Result<String, CallError>> + Send {
                    futures::stream::empty()
                }
            },
        ),
        (
            "async_stream_borrowing_the_context",
            quote!(namespace = "kv", subscription),
            quote! {
                async fn watch(ctx: &OperationContext, key: String) -> impl Stream<Item = String> + Send {
                    futures::stream::empty()
                }
            },
        ),
    ];
    for (name, args, item) in cases {
        check_expansion(name, args, item);
    }
}

#[test]
fn on_error_emits_the_errors_and_the_fn_unchanged() {
    let expanded = crate::operation_impl(
        quote!(),
        quote!(
            fn add(a: i64) -> i64 {
                a
            }
        ),
        None,
    );
    let text = expanded.to_string();
    assert_eq!(text.matches("compile_error").count(), 2, "{text}");
    assert!(text.contains("fn add (a : i64) -> i64 { a }"), "{text}");
    // A stub handle, so uses of `add::ID` elsewhere add no errors.
    assert!(text.contains("struct add { }"), "{text}");
    assert!(
        text.contains("impl :: opkit :: __private :: TypedOperation for add"),
        "{text}"
    );
}

#[test]
fn finds_the_block_around_an_item() {
    use crate::enclosing::{Block, around};
    let source = r##"
mod m {
    /* { */ // {
    const S: &str = "{ \" {";
    const R: &str = r#"{ " {"#;
    const C: char = '{';
    fn f<'a>(x: &'a str) -> impl Fn() + 'a { move || { let _ = x; } }
    #[cfg(all())]
    pub(crate) unsafe impl<T: Clone> Send for W<T> where T: Send {
        #[operation(namespace = "a")]
        async fn inside() {}
    }
    #[operation(namespace = "a")]
    async fn outside() {}
    trait T {
        #[operation(namespace = "a")]
        fn in_trait();
    }
}
#[operation(namespace = "a")]
async fn top() {}
"##;
    let at = |needle: &str| {
        let (line, text) = source
            .lines()
            .enumerate()
            .filter(|(_, text)| text.contains("#[operation"))
            .find(|(index, _)| source.lines().nth(index + 1).unwrap().contains(needle))
            .unwrap();
        around(source, line + 1, text.find('#').unwrap() + 1)
    };
    assert_eq!(at("inside"), Block::Impl);
    assert_eq!(at("outside"), Block::Other);
    assert_eq!(at("in_trait"), Block::Trait);
    assert_eq!(at("top"), Block::Other);
}
