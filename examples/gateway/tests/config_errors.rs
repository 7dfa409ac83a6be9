//! A configuration with a mistake is refused before anything starts, with a typed error
//! naming what was wrong; the binary exits with status 2 and says it.

use opkit_example_gateway::config::Config;
use opkit_example_gateway::error::ConfigError;

const SIGN_IN: &str = "[sign_in]\napi_keys = [{ id = \"ann\", key = { value = \"k\" } }]\n";

fn parse(rest: &str) -> Result<Config, ConfigError> {
    Config::parse(&format!("{SIGN_IN}{rest}"))
}

const SHOP: &str = "[[sources]]\nnamespace = \"shop\"\nopenapi = \"shop.json\"\n";

#[test]
fn a_good_configuration_parses() {
    let config = parse(&format!(
        "{SHOP}[[rules]]\nnamespace = \"shop\"\nscopes = [\"shop\"]\nrate_limit = {{ calls = 5, seconds = 60 }}\n"
    ))
    .expect("a good configuration");
    assert_eq!(config.sources.len(), 1);
    assert_eq!(config.rules[0].rate_limit.map(|limit| limit.calls), Some(5));
}

#[test]
fn no_source_is_named() {
    assert!(matches!(parse(""), Err(ConfigError::NoSources)));
}

#[test]
fn a_source_with_two_locations_names_both() {
    let error = parse("[[sources]]\nnamespace = \"x\"\nopenapi = \"a.json\"\nmcp_url = \"http://127.0.0.1:1/mcp\"\n")
        .expect_err("two locations");
    match &error {
        ConfigError::SourceLocation { namespace, given } => {
            assert_eq!(namespace, "x");
            assert_eq!(given, "openapi and mcp_url");
        }
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("source `x`"), "{error}");
}

#[test]
fn a_source_without_location_says_none() {
    let error = parse("[[sources]]\nnamespace = \"x\"\n").expect_err("no location");
    assert!(
        matches!(&error, ConfigError::SourceLocation { given, .. } if given == "none"),
        "{error:?}"
    );
}

#[test]
fn duplicate_and_bad_namespaces() {
    let error = parse(&format!("{SHOP}{SHOP}")).expect_err("duplicate");
    assert!(
        matches!(&error, ConfigError::DuplicateNamespace { namespace } if namespace == "shop"),
        "{error:?}"
    );
    let error =
        parse("[[sources]]\nnamespace = \"a.b\"\nopenapi = \"a.json\"\n").expect_err("dotted");
    assert!(
        matches!(&error, ConfigError::BadNamespace { namespace } if namespace == "a.b"),
        "{error:?}"
    );
}

#[test]
fn a_rule_for_an_unknown_namespace_names_the_known_ones() {
    let error = parse(&format!(
        "{SHOP}[[rules]]\noperation = \"shop2.get\"\naccess = \"public\"\n"
    ))
    .expect_err("unknown namespace");
    match &error {
        ConfigError::UnknownNamespace {
            index,
            namespace,
            known,
            ..
        } => {
            assert_eq!(
                (*index, namespace.as_str(), known.as_str()),
                (1, "shop2", "shop")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn contradicting_and_empty_rules() {
    let error = parse(&format!(
        "{SHOP}[[rules]]\nnamespace = \"shop\"\naccess = \"public\"\nscopes = [\"a\"]\n"
    ))
    .expect_err("public with scopes");
    assert!(
        matches!(&error, ConfigError::ConflictingAccess { index: 1, access, .. } if access == "public"),
        "{error:?}"
    );
    let error = parse(&format!("{SHOP}[[rules]]\nscopes = [\"a\"]\n")).expect_err("no target");
    assert!(
        matches!(error, ConfigError::RuleTarget { index: 1 }),
        "{error:?}"
    );
    let error = parse(&format!(
        "{SHOP}[[rules]]\nnamespace = \"shop\"\nrate_limit = {{ calls = 0, seconds = 1 }}\n"
    ))
    .expect_err("zero");
    assert!(
        matches!(error, ConfigError::ZeroRateLimit { index: 1, .. }),
        "{error:?}"
    );
}

#[test]
fn unknown_keys_and_bad_values_are_parse_errors_naming_the_key() {
    let error = parse(&format!(
        "{SHOP}[[rules]]\nnamespace = \"shop\"\naccess = \"everyone\"\n"
    ))
    .expect_err("bad access");
    assert!(
        matches!(&error, ConfigError::Parse { message } if message.contains("everyone")),
        "{error:?}"
    );
    let error = parse("[[sources]]\nnamespace = \"x\"\nopenapi = \"a.json\"\ntoken = \"t\"\n")
        .expect_err("unknown key");
    assert!(
        matches!(&error, ConfigError::Parse { message } if message.contains("token")),
        "{error:?}"
    );
}

#[test]
fn sign_in_needs_exactly_one_way() {
    let error = Config::parse(&format!("[sign_in]\n{SHOP}")).expect_err("no sign-in");
    assert!(matches!(error, ConfigError::SignIn), "{error:?}");
}

#[test]
fn a_secret_from_an_unset_variable_names_it() {
    let config = parse(&format!(
        "{SHOP}headers = {{ x-key = {{ env = \"OPKIT_GATEWAY_TEST_UNSET\" }} }}\n"
    ))
    .expect("parses");
    let error = config.sources[0].headers["x-key"]
        .resolve("header `x-key` of source `shop`")
        .expect_err("unset");
    assert!(
        matches!(&error, ConfigError::MissingEnv { var, .. } if var == "OPKIT_GATEWAY_TEST_UNSET"),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("header `x-key` of source `shop`"),
        "{error}"
    );
}

#[test]
fn the_binary_refuses_a_bad_file_with_status_2() {
    let dir = opkit_testkit::dir::TempDir::new("gateway-config");
    let path = dir.join("gateway.toml");
    std::fs::write(&path, format!("{SIGN_IN}{SHOP}{SHOP}")).expect("written");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--config")
        .arg(&path)
        .output()
        .expect("the gateway runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("two sources use the namespace `shop`"),
        "{stderr}"
    );
}

#[test]
fn the_example_file_parses() {
    let config = Config::parse(include_str!("../gateway.example.toml")).expect("the example file");
    assert_eq!(config.sources.len(), 3);
    assert_eq!(
        config.listen_addr(None).expect("its address").to_string(),
        "127.0.0.1:8080"
    );
}
