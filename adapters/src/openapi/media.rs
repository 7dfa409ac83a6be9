//! Media types: [`MediaType`] parsed from a `Content-Type`, and which essences are JSON or
//! text (what the request body and the response reading agree on).

/// A parsed media type: lower-cased `type/subtype` and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MediaType {
    pub essence: String,
    pub params: Vec<(String, String)>,
}

impl MediaType {
    pub fn parse(text: &str) -> Self {
        let mut parts = text.split(';');
        let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let params = parts
            .filter_map(|param| {
                let (key, value) = param.split_once('=')?;
                Some((
                    key.trim().to_ascii_lowercase(),
                    value.trim().trim_matches('"').to_owned(),
                ))
            })
            .collect();
        Self { essence, params }
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn is_json(&self) -> bool {
        is_json(&self.essence)
    }

    pub fn is_text(&self) -> bool {
        is_text(&self.essence)
    }

    pub fn is_event_stream(&self) -> bool {
        self.essence == "text/event-stream"
    }
}

/// `application/json` or a `+json` suffix type (`application/problem+json`).
pub(crate) fn is_json(essence: &str) -> bool {
    essence == "application/json" || essence.ends_with("+json") || essence == "text/json"
}

/// Types whose bodies are text.
pub(crate) fn is_text(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/javascript"
                | "application/x-www-form-urlencoded"
        )
}
