//! Skills (SEP-2640) served beside the registry's operations, from the server's [`Skills`]
//! (feature `mcp-skills`; directories and memory): the extension declared with
//! `directoryRead`, `skills/list`, `skills/get` and `resources/directory/read` answered by
//! the set, each skill's `SKILL.md` listed first among the resources, and every skill file
//! read as a resource (a dynamic skill's other files fall through to the operations'
//! resources). Without the feature, or without skills, these leave the server as it was (the
//! skills methods answer `-32601`).

use super::session::McpHandler;
#[cfg(feature = "mcp-skills")]
use rmcp::ErrorData as McpError;
use rmcp::model::{ListResourcesResult, ReadResourceResult, ServerCapabilities};

#[cfg(feature = "mcp-skills")]
mod files;
#[cfg(feature = "mcp-skills")]
mod memory;
#[cfg(feature = "mcp-skills")]
mod set;

#[cfg(feature = "mcp-skills")]
pub use memory::MemorySkill;
#[cfg(feature = "mcp-skills")]
pub use set::Skills;

#[cfg(feature = "mcp-skills")]
use rmcp::handler::server::skill_catalog::{SKILL_BYTE_LIMIT, SKILL_FILE_LIMIT};

/// Why skills could not be added to a [`Skills`].
#[cfg(feature = "mcp-skills")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillsError {
    /// A directory of skills could not be read.
    #[error("skills directory: {0}")]
    Catalog(#[source] super::SkillCatalogError),
    /// A skill given in memory is not a valid skill.
    #[error("skill `{skill}`: {reason}")]
    Invalid {
        /// The skill's path, as given.
        skill: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Another source already serves a skill at this URI.
    #[error("a skill at {0} is served already")]
    Duplicate(String),
}

impl McpHandler {
    /// `capabilities` with the skills extension, when the server serves skills.
    pub(super) fn declare_skills(&self, capabilities: &mut ServerCapabilities) {
        #[cfg(feature = "mcp-skills")]
        if self.inner.skills.is_some() {
            let declared = ServerCapabilities::builder()
                .enable_skills_with_directory_read()
                .build();
            if let Some(extensions) = declared.extensions {
                let own = capabilities.extensions.get_or_insert_with(Default::default);
                for (name, settings) in extensions.iter() {
                    own.insert(name.clone(), settings.clone());
                }
            }
        }
        #[cfg(not(feature = "mcp-skills"))]
        let _ = capabilities;
    }

    /// A page of `resources/list` with the skills' `SKILL.md` resources before the
    /// operations' on the first page (`first`).
    pub(super) fn with_skill_resources(
        &self,
        page: ListResourcesResult,
        first: bool,
    ) -> ListResourcesResult {
        #[cfg(feature = "mcp-skills")]
        if first && let Some(skills) = &self.inner.skills {
            let mut page = page;
            let mut resources = skills.resources();
            resources.append(&mut page.resources);
            page.resources = resources;
            return page;
        }
        let _ = first;
        page
    }

    /// The contents of the skill file at `uri`, when the server serves one there.
    pub(super) fn read_skill_file(&self, uri: &str) -> Option<ReadResourceResult> {
        #[cfg(feature = "mcp-skills")]
        return self.inner.skills.as_ref()?.read_resource(uri);
        #[cfg(not(feature = "mcp-skills"))]
        {
            let _ = uri;
            None
        }
    }

    /// The server's skills, or the error of a method it does not serve.
    #[cfg(feature = "mcp-skills")]
    pub(super) fn skill_catalog<M: rmcp::model::ConstString + Default>(
        &self,
    ) -> Result<&Skills, McpError> {
        self.inner
            .skills
            .as_deref()
            .ok_or_else(McpError::method_not_found::<M>)
    }
}
