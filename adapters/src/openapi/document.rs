//! Loading a document (JSON or YAML text, a file, a URL), checking its shape, and branching
//! on its OpenAPI version.
//!
//! The document is kept as a [`serde_json::Value`]: no Rust crate parses both 3.0 and 3.1,
//! and a runtime client only needs `paths`, `components`, `servers` and `security`. YAML goes
//! through `serde_norway` (the maintained fork of `serde_yaml`; `serde_yml` is deprecated)
//! straight into a `Value` (see [`super::yaml`]): non-string mapping keys such as `200:`
//! turned into strings, `<<` merge keys applied, integers beyond 64 bits read as floats.

use super::error::OpenApiError;
use super::yaml_depth;
use opkit::schema::json_type_name;
use serde_json::Value;
use url::Url;

/// The OpenAPI version of a document (`major.minor`; the patch version is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpecVersion {
    /// 3.0.x: the schema dialect is converted to JSON Schema 2020-12.
    V3_0,
    /// 3.1.x: schemas are JSON Schema 2020-12 already.
    V3_1,
    /// 3.2.x: as 3.1, plus `itemSchema`, the `query` method, `additionalOperations` and
    /// `in: querystring`.
    V3_2,
}

impl SpecVersion {
    /// `"3.0"`, `"3.1"` or `"3.2"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V3_0 => "3.0",
            Self::V3_1 => "3.1",
            Self::V3_2 => "3.2",
        }
    }
}

/// A parsed, checked document.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub root: Value,
    pub version: SpecVersion,
    /// Where the document was fetched from, for relative server URLs.
    pub location: Option<Url>,
}

/// Parses JSON (when the text starts with `{`) or YAML (anything else).
pub(crate) fn parse_text(text: &str) -> Result<Value, OpenApiError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(|error| OpenApiError::Parse {
            format: "JSON",
            message: error.to_string(),
        })
    } else {
        yaml_depth::check_flow_depth(trimmed, yaml_depth::MAX_YAML_FLOW_DEPTH).map_err(
            |message| OpenApiError::Parse {
                format: "YAML",
                message,
            },
        )?;
        super::yaml::from_str(trimmed).map_err(|error| OpenApiError::Parse {
            format: "YAML",
            message: error.to_string(),
        })
    }
}

/// Checks the root shape and reads the version.
pub(crate) fn check(root: Value, location: Option<Url>) -> Result<Document, OpenApiError> {
    let Some(object) = root.as_object() else {
        return Err(OpenApiError::invalid(
            "",
            "the document root must be an object",
        ));
    };
    if object.contains_key("swagger") {
        return Err(OpenApiError::invalid(
            "/swagger",
            "Swagger 2.0 documents are not supported; convert the document to OpenAPI 3.x",
        ));
    }
    let version = match object.get("openapi") {
        None => {
            return Err(OpenApiError::invalid(
                "/openapi",
                "the `openapi` version field is missing",
            ));
        }
        Some(Value::String(text)) => parse_version(text).ok_or_else(|| {
            OpenApiError::invalid(
                "/openapi",
                format!("unsupported OpenAPI version {text:?} (3.0, 3.1 and 3.2 are supported)"),
            )
        })?,
        Some(other) => {
            return Err(OpenApiError::invalid(
                "/openapi",
                format!("the `openapi` version must be a string like \"3.1.0\", found {other}"),
            ));
        }
    };
    match object.get("paths") {
        Some(Value::Object(_)) => {}
        None if version >= SpecVersion::V3_1 => {}
        None => {
            return Err(OpenApiError::invalid(
                "/paths",
                "an OpenAPI 3.0 document must have `paths`",
            ));
        }
        Some(other) => {
            return Err(OpenApiError::invalid(
                "/paths",
                format!("`paths` must be an object, found {}", json_type_name(other)),
            ));
        }
    }
    for key in ["components", "info"] {
        if let Some(value) = object.get(key)
            && !value.is_object()
        {
            return Err(OpenApiError::invalid(
                format!("/{key}"),
                format!("`{key}` must be an object, found {}", json_type_name(value)),
            ));
        }
    }
    for key in ["servers", "security"] {
        if let Some(value) = object.get(key)
            && !value.is_array()
        {
            return Err(OpenApiError::invalid(
                format!("/{key}"),
                format!("`{key}` must be an array, found {}", json_type_name(value)),
            ));
        }
    }
    Ok(Document {
        root,
        version,
        location,
    })
}

fn parse_version(text: &str) -> Option<SpecVersion> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?;
    let minor = parts.next()?;
    match (major, minor) {
        ("3", "0") => Some(SpecVersion::V3_0),
        ("3", "1") => Some(SpecVersion::V3_1),
        ("3", "2") => Some(SpecVersion::V3_2),
        _ => None,
    }
}

/// `pointer` + `/` + the escaped `segment`.
pub(crate) fn join_pointer(pointer: &str, segment: &str) -> String {
    format!("{pointer}/{}", opkit::schema::pointer::escape(segment))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_with_integer_keys_and_merge_keys_becomes_json() {
        let value = parse_text(
            "openapi: 3.0.3\npaths:\n  /a:\n    get:\n      responses:\n        200:\n          description: ok\nx-base: &base {a: 1}\nx-merged:\n  <<: *base\n  b: 2\n",
        )
        .unwrap();
        assert_eq!(
            value["paths"]["/a"]["get"]["responses"]["200"]["description"],
            "ok"
        );
        assert_eq!(value["x-merged"], json!({"a": 1, "b": 2}));
    }

    #[test]
    fn json_is_detected_and_bad_text_names_the_format() {
        assert_eq!(parse_text(" {\"a\": 1}").unwrap(), json!({"a": 1}));
        let error = parse_text("{\"a\": ").unwrap_err();
        assert!(error.to_string().contains("not valid JSON"), "{error}");
        let error = parse_text("a: [1, 2\nb: }").unwrap_err();
        assert!(error.to_string().contains("not valid YAML"), "{error}");
    }

    #[test]
    fn versions_branch_and_bad_documents_name_the_pointer() {
        let doc = |value: Value| check(value, None);
        assert_eq!(
            doc(json!({"openapi": "3.0.4", "paths": {}}))
                .unwrap()
                .version,
            SpecVersion::V3_0
        );
        assert_eq!(
            doc(json!({"openapi": "3.1.2"})).unwrap().version,
            SpecVersion::V3_1
        );
        assert_eq!(
            doc(json!({"openapi": "3.2.0", "paths": {}}))
                .unwrap()
                .version,
            SpecVersion::V3_2
        );
        let cases = [
            (json!([]), ""),
            (json!({"swagger": "2.0"}), "/swagger"),
            (json!({"paths": {}}), "/openapi"),
            (json!({"openapi": 3.1}), "/openapi"),
            (json!({"openapi": "4.0.0"}), "/openapi"),
            (json!({"openapi": "3.0.0"}), "/paths"),
            (json!({"openapi": "3.1.0", "paths": []}), "/paths"),
            (json!({"openapi": "3.1.0", "servers": {}}), "/servers"),
            (json!({"openapi": "3.1.0", "components": 1}), "/components"),
        ];
        for (value, pointer) in cases {
            let error = doc(value.clone()).unwrap_err();
            assert_eq!(error.pointer(), Some(pointer), "{value}: {error}");
        }
    }
}
