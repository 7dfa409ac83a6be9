//! The attribute's edge groups: `mcp(..)` and `http(..)`, opkit's own edges, whose options
//! the macro checks where it can see them; and any other `name(..)`, an edge of the
//! application's, whose options it carries as JSON for that edge to read
//! (`OperationSpec::edge_options`). The flat MCP keys of earlier versions (`tool_name = ..`,
//! `tool_meta = ..`, `resource = ..`, `prompt`, `task`, `complete(..)`) still work, as
//! deprecated spellings of `mcp(..)`'s options.

use crate::errors::Errors;
use crate::http_args::HttpArgs;
use crate::mcp_args::{MCP_KEYS, McpArgs};
use proc_macro2::Span;
use serde_json::Value;
use syn::Meta;
use syn::spanned::Spanned;

/// The edge groups of one attribute.
#[derive(Default)]
pub(crate) struct Edges {
    pub mcp: McpArgs,
    pub http: Option<HttpArgs>,
    /// The application's edges: name and options.
    pub custom: Vec<(String, Value)>,
    /// Flat MCP keys, each where it was written and its key: deprecated.
    pub deprecated: Vec<(Span, String)>,
}

impl Edges {
    /// Takes `meta` when it is an edge group (or a flat MCP key), `key` its name; `false` for
    /// anything else, or for a group named so close to one of `known` (the attribute's own
    /// keys) that it is more likely a misspelling of it.
    pub(crate) fn take(
        &mut self,
        key: &str,
        meta: &Meta,
        known: &[&'static str],
        errors: &Errors,
    ) -> bool {
        match key {
            "mcp" => self.take_mcp(meta, errors),
            "http" => {
                if let Some(route) = crate::http_args::parse_http(meta, errors) {
                    if self.http.is_some() {
                        errors.spanned(meta.path(), "`http` is given twice: keep one");
                    } else {
                        self.http = Some(route);
                    }
                }
            }
            flat if MCP_KEYS.contains(&flat) => {
                self.mcp.take_known(flat, meta, errors);
                self.deprecated.push((meta.path().span(), flat.to_owned()));
            }
            custom => {
                let Meta::List(_) = meta else {
                    return false;
                };
                if crate::words::closest_key(custom, known).is_some() {
                    return false;
                }
                if self.custom.iter().any(|(name, _)| name == custom) {
                    errors.spanned(
                        meta.path(),
                        format_args!("`{custom}` is given twice: keep one"),
                    );
                } else if let Some(options) = crate::json::group(meta, errors) {
                    self.custom.push((custom.to_owned(), options));
                }
            }
        }
        true
    }

    fn take_mcp(&mut self, meta: &Meta, errors: &Errors) {
        let Some(entries) = errors.list_entries(
            meta,
            "`mcp` takes a list of the MCP server's options: `mcp(resource = \"notes://{id}\")`",
        ) else {
            return;
        };
        for entry in &entries {
            let key = entry
                .path()
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            if self.mcp.take_known(&key, entry, errors) {
                continue;
            }
            if let Some(close) = crate::words::closest_key(&key, MCP_KEYS) {
                errors.spanned(
                    entry.path(),
                    format_args!(
                        "unknown option `{key}` in `mcp(..)`\n  help: did you mean `{close}`?"
                    ),
                );
            } else if let Some((key, value)) = crate::json::entry_json(entry, errors) {
                if self.mcp.other.contains_key(&key) {
                    errors.spanned(
                        entry.path(),
                        format_args!("`{key}` is given twice: keep one"),
                    );
                } else {
                    self.mcp.other.insert(key, value);
                }
            }
        }
    }

    /// Each group given, as the edge's name and its options' JSON text.
    pub(crate) fn json(&self) -> Vec<(String, String)> {
        let mut groups = Vec::new();
        if let Some(mcp) = self.mcp.to_json() {
            groups.push(("mcp".to_owned(), mcp.to_string()));
        }
        if let Some(http) = &self.http {
            groups.push(("http".to_owned(), http.to_json().to_string()));
        }
        for (name, options) in &self.custom {
            groups.push((name.clone(), options.to_string()));
        }
        groups
    }
}
