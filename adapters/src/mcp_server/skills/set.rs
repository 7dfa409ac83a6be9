//! The skills a server serves ([`Skills`]): directory catalogs (rmcp's [`SkillCatalog`],
//! reloadable) and skills held in memory ([`MemorySkill`]), answered as one set. A URI two
//! sources both serve is answered by the one added first; the others' entry is not listed.

use super::SkillsError;
use super::files::SkillFiles;
use super::memory::MemorySkill;
use crate::mcp_server::SkillCatalog;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetSkillResult, ListSkillsResult, ReadResourceDirectoryResult, ReadResourceResult, Resource,
    Skill,
};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// The skills an [`McpServer`](crate::mcp_server::McpServer) serves (SEP-2640), from
/// directories and from memory, in the order added.
///
/// ```no_run
/// use opkit_adapters::mcp_server::{MemorySkill, Skills};
/// # fn demo() -> Result<(), opkit_adapters::mcp_server::SkillsError> {
/// let skills = Skills::new()
///     .directory("./skills")?
///     .skill(MemorySkill::new("report", "---\nname: report\ndescription: Weekly report.\n---\n").dynamic())?;
/// # let _ = skills;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Skills {
    sources: Vec<Source>,
}

#[derive(Debug)]
enum Source {
    Catalog(Arc<SkillCatalog>),
    Memory(Box<(Skill, Resource, SkillFiles)>),
}

impl Skills {
    /// No skills yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every skill below `root` (a folder holding a `SKILL.md` is a skill), read now. To
    /// reload it while served, build a [`SkillCatalog`] and add it with
    /// [`catalog`](Self::catalog).
    pub fn directory(self, root: impl Into<PathBuf>) -> Result<Self, SkillsError> {
        let catalog = SkillCatalog::from_dir(root).map_err(SkillsError::Catalog)?;
        Ok(self.catalog(catalog))
    }

    /// A directory catalog; keep a clone of the `Arc` to
    /// [`reload`](SkillCatalog::reload) it while served.
    #[must_use]
    pub fn catalog(mut self, catalog: impl Into<Arc<SkillCatalog>>) -> Self {
        self.sources.push(Source::Catalog(catalog.into()));
        self
    }

    /// A skill held in memory, checked now.
    pub fn skill(mut self, skill: MemorySkill) -> Result<Self, SkillsError> {
        let (skill, files) = skill.build()?;
        if self.skills().iter().any(|other| other.uri == skill.uri) {
            return Err(SkillsError::Duplicate(skill.uri));
        }
        let manifest = files
            .get(&skill.uri)
            .map_or(0, |file| file.bytes.len() as u64);
        let listing = Resource::new(&skill.uri, &skill.frontmatter.name)
            .with_description(&skill.frontmatter.description)
            .with_mime_type("text/markdown")
            .with_size(manifest);
        self.sources
            .push(Source::Memory(Box::new((skill, listing, files))));
        Ok(self)
    }

    /// Every skill, ordered by URI.
    pub fn skills(&self) -> Vec<Skill> {
        self.first_by_uri(
            |catalog| catalog.skills(),
            |memory| memory.0.clone(),
            |skill| &skill.uri,
        )
    }

    /// The answer to `skills/list`: every skill on one page.
    pub fn list_skills(&self) -> ListSkillsResult {
        ListSkillsResult::with_all_items(self.skills())
    }

    /// The answer to `skills/get`; `-32602` when no skill has that URI.
    pub fn get_skill(&self, uri: &str) -> Result<GetSkillResult, McpError> {
        self.skills()
            .into_iter()
            .find(|skill| skill.uri == uri)
            .map(GetSkillResult::new)
            .ok_or_else(|| McpError::invalid_params(format!("unknown skill {uri}"), None))
    }

    /// Each skill's `SKILL.md` as a resource, for `resources/list`.
    pub fn resources(&self) -> Vec<Resource> {
        self.first_by_uri(
            |catalog| catalog.resources(),
            |memory| memory.1.clone(),
            |entry| &entry.uri,
        )
    }

    /// What each source lists (`of_catalog`, `of_memory`), the first source's entry for each
    /// URI, ordered by URI.
    fn first_by_uri<T>(
        &self,
        of_catalog: impl Fn(&SkillCatalog) -> Vec<T>,
        of_memory: impl Fn(&(Skill, Resource, SkillFiles)) -> T,
        uri: impl Fn(&T) -> &String,
    ) -> Vec<T> {
        let mut seen = HashSet::new();
        let mut listed: Vec<T> = Vec::new();
        for source in &self.sources {
            let found = match source {
                Source::Catalog(catalog) => of_catalog(catalog),
                Source::Memory(memory) => vec![of_memory(memory)],
            };
            listed.extend(
                found
                    .into_iter()
                    .filter(|entry| seen.insert(uri(entry).clone())),
            );
        }
        listed.sort_by(|a, b| uri(a).cmp(uri(b)));
        listed
    }

    /// The answer to `resources/read` for a skill file, or `None` when no source serves
    /// `uri` (a dynamic skill's files, say), so the server's own resources answer.
    pub fn read_resource(&self, uri: &str) -> Option<ReadResourceResult> {
        self.sources.iter().find_map(|source| match source {
            Source::Catalog(catalog) => catalog.read_resource(uri),
            Source::Memory(memory) => memory.2.read(uri),
        })
    }

    /// The answer to `resources/directory/read`; `-32602` when `uri` is no folder of a
    /// skill whose files are listed.
    pub fn read_resource_directory(
        &self,
        uri: &str,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        self.sources
            .iter()
            .find_map(|source| match source {
                Source::Catalog(catalog) => catalog.read_resource_directory(uri).ok(),
                Source::Memory(memory) => memory
                    .2
                    .directory(uri)
                    .filter(|_| !matches!(memory.0.resources, rmcp::model::SkillResources::Dynamic))
                    .map(ReadResourceDirectoryResult::with_all_items),
            })
            .ok_or_else(|| McpError::invalid_params(format!("not a directory: {uri}"), None))
    }
}

impl From<SkillCatalog> for Skills {
    fn from(catalog: SkillCatalog) -> Self {
        Self::new().catalog(catalog)
    }
}

impl From<Arc<SkillCatalog>> for Skills {
    fn from(catalog: Arc<SkillCatalog>) -> Self {
        Self::new().catalog(catalog)
    }
}
