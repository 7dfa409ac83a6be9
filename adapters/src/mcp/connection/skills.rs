//! An imported server's skills (SEP-2640, the `io.modelcontextprotocol/skills` extension):
//! listed on demand ([`McpConnection::skills`], which reads no file) and loaded one at a
//! time ([`McpConnection::load_skill`]), every file verified against the skill's entry
//! before any of it is used.
//!
//! Loading reads the skill's `SKILL.md` first and checks it: its size and `sha256:` digest
//! against the entry's, then its YAML frontmatter field by field against the entry's
//! frontmatter. Only then are the other files read, each checked the same way. The first
//! failure ends the load with a [`SkillError`] and nothing of the skill is returned: a host
//! never uses content the server's own listing does not vouch for. A skill whose files are
//! `"dynamic"` (not listed) cannot be verified and is refused by `load_skill`; its files are
//! read one at a time with [`McpConnection::read_skill_file`], as served (its `SKILL.md`'s
//! frontmatter still checked against the entry's).

use super::McpConnection;
use super::error::McpError;
use crate::skill_text::{encode_path, frontmatter_block};
use rmcp::model::{ReadResourceRequestParams, ResourceContents, Skill, SkillResources};
use serde_json::{Map, Value};

/// One verified file of a loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// Its bytes, as the entry's size and digest vouch for them.
    pub bytes: Vec<u8>,
    /// Its MIME type, when the server gave one.
    pub mime_type: Option<String>,
}

/// A skill whose files were all read and verified: its `SKILL.md` first.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The frontmatter, as the entry and the file agree on it.
    pub frontmatter: Map<String, Value>,
    /// The files, `SKILL.md` first, then the others in the entry's order.
    pub files: Vec<SkillFile>,
}

/// Why a skill was not loaded. Nothing of a skill that fails is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The entry lists its files as `"dynamic"`: they cannot be verified.
    #[error(
        "skill {uri}: its files are \"dynamic\", so they cannot be verified against the listing"
    )]
    Dynamic {
        /// The skill's URI.
        uri: String,
    },
    /// The entry does not list its own `SKILL.md`.
    #[error("skill {uri}: its entry does not list its own SKILL.md")]
    Unlisted {
        /// The skill's URI.
        uri: String,
    },
    /// The skill lists its files and this is not one of them.
    #[error("skill {skill} lists no file {uri}")]
    NotListed {
        /// The skill's URI.
        skill: String,
        /// The file's URI.
        uri: String,
    },
    /// A file could not be read.
    #[error("skill file {uri} could not be read: {message}")]
    Read {
        /// The file's URI.
        uri: String,
        /// What went wrong.
        message: String,
    },
    /// A file's length differs from the entry's `size`.
    #[error("skill file {uri} has {actual} bytes where the listing says {expected}: not used")]
    Size {
        /// The file's URI.
        uri: String,
        /// The entry's size.
        expected: u64,
        /// The bytes read.
        actual: u64,
    },
    /// A file's SHA-256 differs from the entry's `digest`.
    #[error("skill file {uri} does not match the digest the listing gives ({expected}): not used")]
    Digest {
        /// The file's URI.
        uri: String,
        /// The entry's digest.
        expected: String,
    },
    /// The `SKILL.md` frontmatter is missing, unreadable, or differs from the entry's.
    #[error("skill {uri}: {reason}: not loaded")]
    Frontmatter {
        /// The skill's URI.
        uri: String,
        /// Which field differs, or why the frontmatter could not be read.
        reason: String,
    },
    /// The server could not be asked (the connection failed).
    #[error(transparent)]
    Connection(#[from] McpError),
}

impl McpConnection {
    /// The server's skills (`skills/list`, every page): their entries only; no file is
    /// read. Empty when the server does not declare the skills extension.
    pub async fn skills(&self) -> Result<Vec<Skill>, McpError> {
        let client = &self.state.client;
        let declared = client
            .peer()
            .peer_info()
            .is_some_and(|info| info.capabilities.supports_skills());
        if !declared {
            return Ok(Vec::new());
        }
        client
            .peer()
            .list_all_skills()
            .await
            .map_err(|error| McpError::Request {
                label: client.label.clone(),
                message: format!("skills/list: {error}"),
            })
    }

    /// Loads `skill` (an entry of [`skills`](Self::skills)): reads and verifies its
    /// `SKILL.md`, then every other file it lists (see the module docs).
    pub async fn load_skill(&self, skill: &Skill) -> Result<LoadedSkill, SkillError> {
        let SkillResources::Files(listed) = &skill.resources else {
            return Err(SkillError::Dynamic {
                uri: skill.uri.clone(),
            });
        };
        let Some(manifest) = listed.iter().find(|file| file.uri == skill.uri) else {
            return Err(SkillError::Unlisted {
                uri: skill.uri.clone(),
            });
        };
        let first = self.read_verified(manifest).await?;
        let frontmatter = serde_json::to_value(&skill.frontmatter)
            .ok()
            .and_then(|value| value.as_object().cloned())
            .unwrap_or_default();
        compare_frontmatter(&skill.uri, &first.bytes, &frontmatter)?;
        let mut files = vec![first];
        for file in listed.iter().filter(|file| file.uri != skill.uri) {
            files.push(self.read_verified(file).await?);
        }
        Ok(LoadedSkill {
            uri: skill.uri.clone(),
            frontmatter,
            files,
        })
    }

    /// Reads one file of `skill` at `path` below its folder (`"SKILL.md"`,
    /// `"references/style.md"`), without loading the rest: verified by size and digest when
    /// the skill lists its files, read as served when they are `"dynamic"`. A `SKILL.md` is
    /// also checked against the entry's frontmatter.
    pub async fn read_skill_file(
        &self,
        skill: &Skill,
        path: &str,
    ) -> Result<SkillFile, SkillError> {
        let folder = skill
            .uri
            .strip_suffix(rmcp::model::SKILL_MD)
            .unwrap_or(&skill.uri);
        let uri = format!("{folder}{}", encode_path(path));
        let file = match &skill.resources {
            SkillResources::Files(listed) => {
                let entry = listed.iter().find(|file| file.uri == uri).ok_or_else(|| {
                    SkillError::NotListed {
                        skill: skill.uri.clone(),
                        uri: uri.clone(),
                    }
                })?;
                self.read_verified(entry).await?
            }
            _ => self.read_file(uri).await?,
        };
        if file.uri == skill.uri {
            let frontmatter = serde_json::to_value(&skill.frontmatter)
                .ok()
                .and_then(|value| value.as_object().cloned())
                .unwrap_or_default();
            compare_frontmatter(&skill.uri, &file.bytes, &frontmatter)?;
        }
        Ok(file)
    }

    /// Reads the file `listed` names and checks its size and digest.
    async fn read_verified(
        &self,
        listed: &rmcp::model::SkillResource,
    ) -> Result<SkillFile, SkillError> {
        let file = self.read_file(listed.uri.clone()).await?;
        check_bytes(listed, &file.bytes)?;
        Ok(file)
    }

    /// Reads the file at `uri`, as served.
    async fn read_file(&self, uri: String) -> Result<SkillFile, SkillError> {
        let read_failed = |message: String| SkillError::Read {
            uri: uri.clone(),
            message,
        };
        let result = self
            .state
            .client
            .peer()
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .map_err(|error| read_failed(error.to_string()))?;
        let contents = result
            .contents
            .into_iter()
            .next()
            .ok_or_else(|| read_failed("the read returned no contents".to_owned()))?;
        let (bytes, mime_type) = match contents {
            ResourceContents::TextResourceContents {
                text, mime_type, ..
            } => (text.into_bytes(), mime_type),
            ResourceContents::BlobResourceContents {
                blob, mime_type, ..
            } => {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .map_err(|error| read_failed(format!("its blob is not base64: {error}")))?;
                (bytes, mime_type)
            }
            _ => {
                return Err(read_failed(
                    "its contents are neither text nor a blob".to_owned(),
                ));
            }
        };
        Ok(SkillFile {
            uri,
            bytes,
            mime_type,
        })
    }
}

/// `bytes` against the entry's size, then its digest.
fn check_bytes(listed: &rmcp::model::SkillResource, bytes: &[u8]) -> Result<(), SkillError> {
    let actual = bytes.len() as u64;
    if actual != listed.size {
        return Err(SkillError::Size {
            uri: listed.uri.clone(),
            expected: listed.size,
            actual,
        });
    }
    let digest = rmcp::model::sha256_digest(bytes);
    if !digest.eq_ignore_ascii_case(&listed.digest) {
        return Err(SkillError::Digest {
            uri: listed.uri.clone(),
            expected: listed.digest.clone(),
        });
    }
    Ok(())
}

/// The YAML frontmatter of `manifest` (a `SKILL.md`) against the entry's, field by field.
fn compare_frontmatter(
    uri: &str,
    manifest: &[u8],
    listed: &Map<String, Value>,
) -> Result<(), SkillError> {
    let failed = |reason: String| SkillError::Frontmatter {
        uri: uri.to_owned(),
        reason,
    };
    let text = std::str::from_utf8(manifest)
        .map_err(|_| failed("its SKILL.md is not UTF-8".to_owned()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let block = frontmatter_block(text)
        .ok_or_else(|| failed("its SKILL.md has no leading `---` frontmatter block".to_owned()))?;
    let parsed: Value = serde_norway::from_str(block)
        .map_err(|error| failed(format!("its SKILL.md frontmatter is not YAML: {error}")))?;
    let Value::Object(parsed) = parsed else {
        return Err(failed(
            "its SKILL.md frontmatter is not a mapping".to_owned(),
        ));
    };
    let fields = parsed.keys().chain(listed.keys());
    for field in fields {
        if parsed.get(field) != listed.get(field) {
            return Err(failed(format!(
                "the frontmatter field `{field}` of its SKILL.md differs from the listing's"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::SkillResource;
    use serde_json::json;

    const MANIFEST: &str = "---\nname: pdf-processing\ndescription: Extract PDFs\n---\n\nBody.\n";

    fn listed(bytes: &[u8]) -> SkillResource {
        SkillResource::new(
            "skill://pdf-processing/SKILL.md",
            rmcp::model::sha256_digest(bytes),
            bytes.len() as u64,
        )
    }

    #[test]
    fn a_file_is_checked_by_size_then_digest() {
        let entry = listed(MANIFEST.as_bytes());
        assert!(check_bytes(&entry, MANIFEST.as_bytes()).is_ok());
        let longer = format!("{MANIFEST}more\n");
        assert!(matches!(
            check_bytes(&entry, longer.as_bytes()),
            Err(SkillError::Size { expected, .. }) if expected == MANIFEST.len() as u64
        ));
        let tampered = MANIFEST.replace("Body.", "Evil.");
        assert!(matches!(
            check_bytes(&entry, tampered.as_bytes()),
            Err(SkillError::Digest { .. })
        ));
    }

    #[test]
    fn the_frontmatter_must_equal_the_listings_field_by_field() {
        let listed = json!({"name": "pdf-processing", "description": "Extract PDFs"});
        let listed = listed.as_object().unwrap();
        assert!(compare_frontmatter("s", MANIFEST.as_bytes(), listed).is_ok());
        let changed = MANIFEST.replace("Extract PDFs", "Exfiltrate credentials");
        let error = compare_frontmatter("s", changed.as_bytes(), listed).unwrap_err();
        assert!(error.to_string().contains("`description`"), "{error}");
        let extra = MANIFEST.replace("name:", "license: MIT\nname:");
        assert!(compare_frontmatter("s", extra.as_bytes(), listed).is_err());
        assert!(compare_frontmatter("s", b"no frontmatter", listed).is_err());
        assert_eq!(
            frontmatter_block("---\r\na: 1\r\n---\r\nx"),
            Some("a: 1\r\n")
        );
    }
}
