//! The operations served as MCP resources, resource templates and prompts rather than as
//! tools: those whose MCP options say `resource` or `prompt` (`#[operation(mcp(resource =
//! ".."))]`, `#[operation(mcp(prompt))]`). Built with the tool names, from the same registry
//! revision.

use super::naming::{ToolNameError, ToolNaming, tool_name_of};
use super::options::option;
use super::template::UriTemplate;
use opkit::{OperationKind, OperationSpec};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One operation served as a resource (a fixed URI), a resource template (a URI with
/// `{variables}`) or the updates of either (a subscription).
#[derive(Debug)]
pub(crate) struct ResourceEntry {
    /// The operation's id.
    pub(crate) id: Arc<str>,
    /// Its spec.
    pub(crate) spec: Arc<OperationSpec>,
    /// The resource's name (the operation's tool name).
    pub(crate) name: String,
    /// The URI or URI template.
    pub(crate) template: UriTemplate,
    /// The MIME type the extension names, if it names one.
    pub(crate) mime_type: Option<String>,
}

/// One operation served as a prompt.
#[derive(Debug)]
pub(crate) struct PromptEntry {
    /// The operation's id.
    pub(crate) id: Arc<str>,
    /// Its spec.
    pub(crate) spec: Arc<OperationSpec>,
}

/// The resources, templates, resource watchers and prompts of one registry revision.
#[derive(Debug, Clone, Default)]
pub(crate) struct Catalog {
    /// Queries at a fixed URI, in id order.
    pub(crate) resources: Vec<Arc<ResourceEntry>>,
    /// Queries at a URI template, in id order.
    pub(crate) templates: Vec<Arc<ResourceEntry>>,
    /// Subscriptions whose items say a resource changed.
    pub(crate) watchers: Vec<Arc<ResourceEntry>>,
    /// Prompts by name.
    pub(crate) prompts: BTreeMap<String, Arc<PromptEntry>>,
}

impl Catalog {
    /// Takes `spec` when it is a resource or a prompt (`Ok(true)`); `Ok(false)` leaves it a
    /// tool. A prompt name taken twice, or a resource extension without a URI, is refused.
    pub(crate) fn add(
        &mut self,
        spec: &Arc<OperationSpec>,
        naming: ToolNaming,
    ) -> Result<bool, ToolNameError> {
        let id: Arc<str> = Arc::from(spec.id().as_str());
        if let Some(resource) = option(spec, "resource") {
            let invalid = |reason: String| ToolNameError::Invalid {
                operation: id.to_string(),
                tool: tool_name_of(spec, naming),
                reason,
            };
            let uri = resource
                .as_str()
                .ok_or_else(|| invalid("its `resource` is not a URI string".to_owned()))?;
            let template = UriTemplate::parse(uri).map_err(invalid)?;
            if let Some(properties) = spec
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                && let Some(missing) = template
                    .variables()
                    .find(|name| !properties.contains_key(*name))
            {
                return Err(invalid(format!(
                    "its resource URI {uri:?} has the variable `{{{missing}}}`, which is not a field of its input"
                )));
            }
            let entry = Arc::new(ResourceEntry {
                id,
                spec: spec.clone(),
                name: tool_name_of(spec, naming),
                template,
                mime_type: option(spec, "mime_type")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
            let list = match (spec.kind, entry.template.is_fixed()) {
                (OperationKind::Subscription, _) => &mut self.watchers,
                (_, true) => &mut self.resources,
                (_, false) => &mut self.templates,
            };
            list.push(entry);
            return Ok(true);
        }
        if option(spec, "prompt") == Some(&Value::Bool(true)) {
            let name = tool_name_of(spec, naming);
            if let Some(first) = self.prompts.get(&name) {
                return Err(ToolNameError::Collision {
                    tool: name,
                    first: first.id.to_string(),
                    second: id.to_string(),
                });
            }
            self.prompts.insert(
                name,
                Arc::new(PromptEntry {
                    id,
                    spec: spec.clone(),
                }),
            );
            return Ok(true);
        }
        Ok(false)
    }

    /// Checks the completions the prompts and resource templates name (`complete(..)`):
    /// each for an input field, each by a query of `specs`.
    pub(crate) fn check_completers(
        &self,
        specs: &[Arc<OperationSpec>],
        naming: ToolNaming,
    ) -> Result<(), ToolNameError> {
        let completing = self
            .prompts
            .values()
            .map(|entry| &entry.spec)
            .chain(self.templates.iter().map(|entry| &entry.spec))
            .chain(self.resources.iter().map(|entry| &entry.spec))
            .chain(self.watchers.iter().map(|entry| &entry.spec));
        for spec in completing {
            let Some(completers) = option(spec, "complete") else {
                continue;
            };
            let invalid = |reason: String| ToolNameError::Invalid {
                operation: spec.id(),
                tool: tool_name_of(spec, naming),
                reason,
            };
            let Some(completers) = completers.as_object() else {
                return Err(invalid(
                    "its `complete` is not an object of argument names to query ids".to_owned(),
                ));
            };
            let properties = spec.input_schema.get("properties");
            for (argument, completer) in completers {
                if properties.and_then(|fields| fields.get(argument)).is_none() {
                    return Err(invalid(format!(
                        "it completes `{argument}`, which is not a field of its input"
                    )));
                }
                let found = completer
                    .as_str()
                    .and_then(|completer| specs.iter().find(|other| other.id() == completer));
                match found {
                    Some(other) if other.kind == OperationKind::Query => {}
                    Some(other) => {
                        return Err(invalid(format!(
                            "`{argument}` is completed by `{}`, which is a {:?}, not a query",
                            other.id(),
                            other.kind
                        )));
                    }
                    None => {
                        return Err(invalid(format!(
                            "`{argument}` is completed by {completer}, which is not an operation of the registry"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The query that reads `uri`, with the input its URI variables make: a fixed resource
    /// first, then the first template (in id order) that matches.
    pub(crate) fn reader(&self, uri: &str) -> Option<(&Arc<ResourceEntry>, Value)> {
        self.resources
            .iter()
            .chain(&self.templates)
            .find_map(|entry| Some((entry, entry.input_of(uri)?)))
    }

    /// The subscription that reports changes of `uri`, with its input.
    pub(crate) fn watcher(&self, uri: &str) -> Option<(&Arc<ResourceEntry>, Value)> {
        self.watchers
            .iter()
            .find_map(|entry| Some((entry, entry.input_of(uri)?)))
    }

    /// `true` when there is anything to serve besides tools.
    pub(crate) fn has_resources(&self) -> bool {
        !(self.resources.is_empty() && self.templates.is_empty() && self.watchers.is_empty())
    }
}

impl ResourceEntry {
    /// The operation's input for `uri`, when its template matches: each variable's text,
    /// read as the input schema's type for that field.
    pub(crate) fn input_of(&self, uri: &str) -> Option<Value> {
        let variables = self.template.matches(uri)?;
        Some(super::arguments::input_from_strings(
            &self.spec.input_schema,
            variables,
        ))
    }
}
