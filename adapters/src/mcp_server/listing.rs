//! `tools/list`, page by page: [`TOOLS_PAGE_SIZE`] tools per page in id order, the cursor
//! naming the first operation id of the next page; the pages of the other lists
//! ([`page_of`]: [`LIST_PAGE_SIZE`] resources, templates or prompts, the cursor naming the
//! first of the next page the same way); and the freshness every list result carries
//! ([`cached`]). A page's tool definitions (and the
//! self-contained schemas in them) are built for that page and dropped once it is sent, so
//! listing thousands of imported operations holds one page of schemas at a time, not every
//! operation's copy of the definitions it reaches.

use super::names::ToolNames;
use super::tools;
use opkit::middleware::{CacheHint, CacheScope};
use rmcp::model::{
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Tool,
};

/// How many tools one `tools/list` page holds. Small, because an imported operation's
/// self-contained schemas can be large (DocuSign's average 180 KB of JSON a tool): a page
/// of 20 such tools is a few MB on the wire.
pub const TOOLS_PAGE_SIZE: usize = 20;

/// How many resources, resource templates or prompts one page of their list holds.
pub const LIST_PAGE_SIZE: usize = 100;

/// The page of `items` (sorted by `key`) that starts at the first item whose key is not
/// before `cursor` (the first page without one), and the key the next page starts at.
pub(crate) fn page_of<'a, T>(
    items: &'a [T],
    key: impl Fn(&T) -> &str,
    cursor: Option<&str>,
) -> (&'a [T], Option<String>) {
    let start = cursor.map_or(0, |cursor| items.partition_point(|item| key(item) < cursor));
    let end = (start + LIST_PAGE_SIZE).min(items.len());
    let next = items.get(end).map(|item| key(item).to_owned());
    (&items[start..end], next)
}

/// The page of the operations `names` holds (in id order) that starts at the first id not
/// before `cursor` (the first page without one); its `nextCursor` is the id the next page
/// starts at. A cursor the server did not give still names a place in the id order, so a
/// client that keeps one across registry changes resumes where it left off.
pub(crate) fn page(names: &ToolNames, cursor: Option<&str>, modern: bool) -> ListToolsResult {
    let mut operations = names.starting_at(cursor.unwrap_or(""));
    let tools: Vec<Tool> = operations
        .by_ref()
        .take(TOOLS_PAGE_SIZE)
        // Built for this page only (not the definition a call keeps).
        .filter_map(|(_, tool, served)| tools::tool(&served.spec, tool, modern))
        .collect();
    let mut result = ListToolsResult::with_all_items(tools);
    result.next_cursor = operations.next().map(|(id, _, _)| id.to_owned());
    result
}

/// A list result, which carries `ttlMs` and `cacheScope`.
pub(crate) trait ListResult {
    /// Sets both.
    fn set_freshness(&mut self, ttl_ms: u64, scope: rmcp::model::CacheScope);
}

macro_rules! list_result {
    ($($result:ty),*) => {$(
        impl ListResult for $result {
            fn set_freshness(&mut self, ttl_ms: u64, scope: rmcp::model::CacheScope) {
                self.ttl_ms = Some(ttl_ms);
                self.cache_scope = Some(scope);
            }
        }
    )*};
}

list_result!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult
);

#[cfg(feature = "mcp-skills")]
list_result!(rmcp::model::ListSkillsResult, rmcp::model::GetSkillResult);

/// A list result with the server's freshness hint, when it has one.
pub(crate) fn cached<R: ListResult>(mut result: R, hint: Option<CacheHint>) -> R {
    if let Some(hint) = hint {
        let scope = match hint.scope {
            CacheScope::Private => rmcp::model::CacheScope::Private,
            CacheScope::Public => rmcp::model::CacheScope::Public,
        };
        let ttl_ms = u64::try_from(hint.ttl.as_millis()).unwrap_or(u64::MAX);
        result.set_freshness(ttl_ms, scope);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::super::naming::ToolNaming;
    use super::*;
    use opkit::{OperationKind, OperationSpec};
    use std::sync::Arc;

    fn specs(count: usize) -> Vec<Arc<OperationSpec>> {
        let mut specs: Vec<Arc<OperationSpec>> = (0..count)
            .map(|i| {
                Arc::new(OperationSpec::new(
                    "api",
                    format!("op{i:04}"),
                    OperationKind::Query,
                ))
            })
            .collect();
        specs.sort_by_key(|spec| spec.id());
        specs
    }

    #[test]
    fn pages_follow_the_cursor_to_the_end() {
        let specs = specs(2 * TOOLS_PAGE_SIZE + 7);
        let names = ToolNames::build(&specs, ToolNaming::OperationId).unwrap();
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let page = page(&names, cursor.as_deref(), true);
            pages += 1;
            listed.extend(page.tools.into_iter().map(|tool| tool.name.to_string()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        let expected: Vec<String> = specs.iter().map(|spec| spec.id()).collect();
        assert_eq!(listed, expected);
    }

    #[test]
    fn a_small_registry_is_one_page_and_any_cursor_names_a_place() {
        let specs = specs(3);
        let names = ToolNames::build(&specs, ToolNaming::OperationId).unwrap();
        let all = page(&names, None, false);
        assert_eq!((all.tools.len(), all.next_cursor), (3, None));
        let rest = page(&names, Some("api.op0001"), false);
        assert_eq!(rest.tools.len(), 2);
        assert!(page(&names, Some("zzz"), false).tools.is_empty());
    }

    #[test]
    fn other_lists_page_by_key() {
        let items: Vec<String> = (0..(LIST_PAGE_SIZE + 3))
            .map(|i| format!("r{i:04}"))
            .collect();
        let (first, next) = page_of(&items, String::as_str, None);
        assert_eq!(first.len(), LIST_PAGE_SIZE);
        let (rest, last) = page_of(&items, String::as_str, next.as_deref());
        assert_eq!(rest.len(), 3);
        assert_eq!(last, None);
        assert_eq!(rest[0], items[LIST_PAGE_SIZE]);
        let (past, none) = page_of(&items, String::as_str, Some("zzz"));
        assert!(past.is_empty() && none.is_none());
    }
}
