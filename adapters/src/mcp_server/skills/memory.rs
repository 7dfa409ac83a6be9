//! A skill held in memory ([`MemorySkill`]): its `SKILL.md` and files given as bytes, checked
//! once when added to [`Skills`](super::Skills) (frontmatter, name against path, file paths,
//! limits), then served as-is. A *dynamic* skill lists only its `SKILL.md` (`resources:
//! "dynamic"`); its other files are whatever the server's resource operations answer under
//! the skill's URI.

use super::files::{SkillFiles, parse_frontmatter};
use super::{SKILL_BYTE_LIMIT, SKILL_FILE_LIMIT, SkillsError};
use rmcp::model::{SKILL_MD, Skill, SkillResource, SkillResources};

/// A skill given in memory: a `SKILL.md` (YAML frontmatter with `name` and `description`)
/// at a path such as `"summarize"` or `"acme/summarize"` (its last segment is the skill's
/// name), and files below it.
///
/// ```
/// use opkit_adapters::mcp_server::{MemorySkill, Skills};
/// let skills = Skills::new().skill(
///     MemorySkill::new(
///         "summarize",
///         "---\nname: summarize\ndescription: Summarize a thread.\n---\nRead references/style.md.\n",
///     )
///     .file("references/style.md", "# Style\n\nShort sentences.\n"),
/// )?;
/// assert_eq!(skills.skills()[0].uri, "skill://summarize/SKILL.md");
/// # Ok::<(), opkit_adapters::mcp_server::SkillsError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MemorySkill {
    path: String,
    manifest: Vec<u8>,
    files: Vec<(String, Vec<u8>)>,
    dynamic: bool,
}

impl MemorySkill {
    /// A skill at `path` (`/`-separated, below `skill://`) whose `SKILL.md` is `manifest`.
    pub fn new(path: impl Into<String>, manifest: impl Into<Vec<u8>>) -> Self {
        Self {
            path: path.into(),
            manifest: manifest.into(),
            files: Vec::new(),
            dynamic: false,
        }
    }

    /// A file of the skill at `path`, relative to its folder (`"references/style.md"`).
    #[must_use]
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.into(), bytes.into()));
        self
    }

    /// Lists the skill with `resources: "dynamic"`: no manifest of files (their contents
    /// change, so no digest holds), and every file but `SKILL.md` read from the server's
    /// resource operations (a `mcp(resource = "skill://<path>/{file}")` template, say).
    /// Files given with [`file`](Self::file) are refused: they would be fixed.
    #[must_use]
    pub fn dynamic(mut self) -> Self {
        self.dynamic = true;
        self
    }

    /// The checked skill, or what is wrong with it.
    pub(super) fn build(self) -> Result<(Skill, SkillFiles), SkillsError> {
        let invalid = |reason: String| SkillsError::Invalid {
            skill: self.path.clone(),
            reason,
        };
        let dir = checked_path(&self.path).map_err(&invalid)?;
        if self.dynamic && !self.files.is_empty() {
            return Err(invalid(
                "a dynamic skill's files come from resource operations; drop `.file(..)` or \
                 `.dynamic()`"
                    .into(),
            ));
        }
        let frontmatter = parse_frontmatter(&self.manifest).map_err(&invalid)?;
        let bytes = self.manifest.len() + self.files.iter().map(|(_, b)| b.len()).sum::<usize>();
        let count = self.files.len() + 1;
        if count > SKILL_FILE_LIMIT || bytes as u64 > SKILL_BYTE_LIMIT {
            return Err(invalid(format!(
                "{count} files and {bytes} bytes exceed the limit of {SKILL_FILE_LIMIT} files \
                 or {SKILL_BYTE_LIMIT} bytes, so hosts need not load it"
            )));
        }
        let mut files = SkillFiles::new(&dir);
        files.insert(SKILL_MD, self.manifest.into());
        for (path, bytes) in self.files {
            let path = checked_path(&path).map_err(&invalid)?;
            if path == SKILL_MD {
                return Err(invalid(
                    "SKILL.md is the manifest given to MemorySkill::new".into(),
                ));
            }
            if !files.insert(&path, bytes.into()) {
                return Err(invalid(format!("{path} is given twice")));
            }
        }
        let uri = files.uri_of(SKILL_MD);
        let resources = if self.dynamic {
            SkillResources::Dynamic
        } else {
            SkillResources::Files(
                files
                    .iter()
                    .map(|(uri, file)| SkillResource::from_bytes(uri, &file.bytes))
                    .collect(),
            )
        };
        let skill = Skill::new(uri, frontmatter, resources);
        skill
            .validate()
            .map_err(|error| invalid(error.to_string()))?;
        Ok((skill, files))
    }
}

/// `path` when every segment is a plain name (not empty, `.`, `..`, hidden, or holding a
/// backslash or control character), else why not.
fn checked_path(path: &str) -> Result<String, String> {
    if path.is_empty() {
        return Err("the path is empty".into());
    }
    for segment in path.split('/') {
        let refused = segment.is_empty()
            || segment.starts_with('.')
            || segment.contains('\\')
            || segment.chars().any(char::is_control);
        if refused {
            return Err(format!(
                "`{path}` must be `/`-separated plain names (no empty, hidden, `..` or \
                 backslashed segments)"
            ));
        }
    }
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "---\nname: notes\ndescription: Keep notes.\n---\nBody\n";

    #[test]
    fn a_skill_lists_every_file_with_its_digest() {
        let (skill, files) = MemorySkill::new("team/notes", MANIFEST)
            .file("a b.md", "x")
            .build()
            .unwrap();
        assert_eq!(skill.uri, "skill://team/notes/SKILL.md");
        let SkillResources::Files(listed) = &skill.resources else {
            panic!("files expected")
        };
        let uris: Vec<&str> = listed.iter().map(|file| file.uri.as_str()).collect();
        assert_eq!(
            uris,
            ["skill://team/notes/SKILL.md", "skill://team/notes/a%20b.md"]
        );
        assert_eq!(listed[1].size, 1);
        assert!(files.get("skill://team/notes/a%20b.md").is_some());
    }

    #[test]
    fn bad_skills_are_refused_with_the_reason() {
        let refused = |skill: MemorySkill| skill.build().unwrap_err().to_string();
        let wrong_name = refused(MemorySkill::new("other", MANIFEST));
        assert!(wrong_name.contains("other"), "{wrong_name}");
        let escape = refused(MemorySkill::new("notes", MANIFEST).file("../x", "x"));
        assert!(escape.contains("plain names"), "{escape}");
        let twice = refused(
            MemorySkill::new("notes", MANIFEST)
                .file("a", "1")
                .file("a", "2"),
        );
        assert!(twice.contains("twice"), "{twice}");
        let no_frontmatter = refused(MemorySkill::new("notes", "# Notes\n"));
        assert!(no_frontmatter.contains("frontmatter"), "{no_frontmatter}");
        let fixed_dynamic = refused(MemorySkill::new("notes", MANIFEST).file("a", "1").dynamic());
        assert!(fixed_dynamic.contains("dynamic"), "{fixed_dynamic}");
        let manifest_twice = refused(MemorySkill::new("notes", MANIFEST).file("SKILL.md", "x"));
        assert!(manifest_twice.contains("manifest"), "{manifest_twice}");
    }

    #[test]
    fn a_dynamic_skill_lists_no_files() {
        let (skill, files) = MemorySkill::new("notes", MANIFEST)
            .dynamic()
            .build()
            .unwrap();
        assert_eq!(skill.resources, SkillResources::Dynamic);
        assert_eq!(files.iter().count(), 1, "SKILL.md only");
    }
}
