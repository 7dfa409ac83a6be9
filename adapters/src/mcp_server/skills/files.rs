//! The files of one skill held in memory ([`SkillFiles`]), keyed by their `skill://` URI:
//! read as resources (text when the type is textual and the bytes are UTF-8 without NUL,
//! else a base64 blob), listed by folder for `resources/directory/read`; and the reading of
//! a `SKILL.md`'s YAML frontmatter.

use crate::skill_text::{encode_path, frontmatter_block};
use base64::Engine;
use rmcp::model::{
    DIRECTORY_MIME_TYPE, ReadResourceResult, Resource, ResourceContents, SkillFrontmatter,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One file's bytes and type.
#[derive(Debug)]
pub(super) struct StoredFile {
    /// Relative to the skill's folder.
    pub(super) path: String,
    pub(super) bytes: Arc<[u8]>,
    pub(super) mime_type: Option<&'static str>,
}

/// The files of a skill whose folder is `dir`, by URI (so in URI order).
#[derive(Debug)]
pub(super) struct SkillFiles {
    dir: String,
    files: BTreeMap<String, StoredFile>,
}

impl SkillFiles {
    pub(super) fn new(dir: &str) -> Self {
        Self {
            dir: dir.to_owned(),
            files: BTreeMap::new(),
        }
    }

    /// The URI of `path` (relative to the skill's folder; `""` for the folder itself).
    pub(super) fn uri_of(&self, path: &str) -> String {
        let full = if path.is_empty() {
            self.dir.clone()
        } else {
            format!("{}/{path}", self.dir)
        };
        format!("skill://{}", encode_path(&full))
    }

    /// Adds the file at `path`; `false` when one is there already.
    pub(super) fn insert(&mut self, path: &str, bytes: Arc<[u8]>) -> bool {
        let uri = self.uri_of(path);
        if self.files.contains_key(&uri) {
            return false;
        }
        let mime_type = mime_type_of(path);
        let path = path.to_owned();
        self.files.insert(
            uri,
            StoredFile {
                path,
                bytes,
                mime_type,
            },
        );
        true
    }

    pub(super) fn get(&self, uri: &str) -> Option<&StoredFile> {
        self.files.get(uri)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &StoredFile)> {
        self.files.iter()
    }

    /// The answer to `resources/read` for `uri`, when it is one of these files.
    pub(super) fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        let file = self.files.get(uri)?;
        let text = file
            .mime_type
            .filter(|mime| is_textual(mime))
            .and_then(|_| std::str::from_utf8(&file.bytes).ok())
            .filter(|text| !text.contains('\0'));
        let contents = match text {
            Some(text) => ResourceContents::text(text, uri),
            None => ResourceContents::blob(
                base64::engine::general_purpose::STANDARD.encode(&file.bytes),
                uri,
            ),
        };
        let contents = match file.mime_type {
            Some(mime) => contents.with_mime_type(mime),
            None => contents,
        };
        Some(ReadResourceResult::new(vec![contents]))
    }

    /// The entries of the folder at `uri` (the skill's or one below it), or `None` when
    /// `uri` is no folder of this skill.
    pub(super) fn directory(&self, uri: &str) -> Option<Vec<Resource>> {
        let folder = if uri == self.uri_of("") {
            String::new()
        } else {
            let prefix = self.uri_of("") + "/";
            let rest = uri.strip_prefix(&prefix)?;
            let folder = percent_encoding::percent_decode_str(rest)
                .decode_utf8()
                .ok()?
                .into_owned();
            let inside = format!("{folder}/");
            if !self
                .files
                .values()
                .any(|file| file.path.starts_with(&inside))
            {
                return None;
            }
            folder
        };
        let prefix = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        let mut folders: Vec<&str> = Vec::new();
        let mut entries = Vec::new();
        for file in self.files.values() {
            let Some(rest) = file.path.strip_prefix(&prefix) else {
                continue;
            };
            match rest.split_once('/') {
                Some((child, _)) if !folders.contains(&child) => folders.push(child),
                Some(_) => {}
                None => {
                    let mut entry = Resource::new(self.uri_of(&file.path), rest)
                        .with_size(file.bytes.len() as u64);
                    entry.mime_type = file.mime_type.map(Into::into);
                    entries.push(entry);
                }
            }
        }
        for child in folders {
            let path = format!("{prefix}{child}");
            entries
                .push(Resource::new(self.uri_of(&path), child).with_mime_type(DIRECTORY_MIME_TYPE));
        }
        entries.sort_by(|a, b| a.uri.cmp(&b.uri));
        Some(entries)
    }
}

/// The YAML block between a `SKILL.md`'s leading `---` lines, as frontmatter.
pub(super) fn parse_frontmatter(manifest: &[u8]) -> Result<SkillFrontmatter, String> {
    let text = std::str::from_utf8(manifest).map_err(|_| "SKILL.md is not UTF-8".to_owned())?;
    let block = frontmatter_block(text).ok_or(
        "SKILL.md does not start with a `---` frontmatter block closed by another `---` line",
    )?;
    serde_norway::from_str(block)
        .map_err(|error| format!("its SKILL.md frontmatter is not valid: {error}"))
}

/// Whether a file of this type goes out as `text` (when its bytes allow).
fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json" | "application/yaml" | "application/toml" | "application/xml"
        )
}

/// The media type of a file by its extension; `None` when unknown (no `mimeType` sent).
fn mime_type_of(path: &str) -> Option<&'static str> {
    let (_, extension) = path.rsplit('/').next()?.rsplit_once('.')?;
    Some(match extension.to_ascii_lowercase().as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "js" | "mjs" => "text/javascript",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "sh" => "text/x-shellscript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> SkillFiles {
        let mut files = SkillFiles::new("notes");
        for (path, bytes) in [
            ("SKILL.md", &b"---\nname: notes\n---\n"[..]),
            ("references/style.md", b"# Style"),
            ("references/deep/a.bin", b"\0\x01"),
        ] {
            assert!(files.insert(path, bytes.into()));
        }
        files
    }

    #[test]
    fn folders_list_files_and_folders_below_them() {
        let files = files();
        let top: Vec<String> = files
            .directory("skill://notes")
            .unwrap()
            .into_iter()
            .map(|entry| format!("{} {:?}", entry.uri, entry.mime_type))
            .collect();
        assert_eq!(
            top,
            [
                "skill://notes/SKILL.md Some(\"text/markdown\")",
                "skill://notes/references Some(\"inode/directory\")",
            ]
        );
        let below = files.directory("skill://notes/references").unwrap();
        assert_eq!(below.len(), 2);
        assert!(files.directory("skill://notes/nothing").is_none());
        assert!(files.directory("skill://other").is_none());
    }

    #[test]
    fn text_is_sent_as_text_and_the_rest_as_base64() {
        let files = files();
        let text = serde_json::to_value(files.read("skill://notes/references/style.md")).unwrap();
        assert_eq!(text["contents"][0]["text"], "# Style");
        let blob = serde_json::to_value(files.read("skill://notes/references/deep/a.bin")).unwrap();
        assert_eq!(blob["contents"][0]["blob"], "AAE=");
    }

    #[test]
    fn frontmatter_needs_both_fences() {
        let parsed = parse_frontmatter(b"---\r\nname: a\r\ndescription: b\r\n---\r\nx").unwrap();
        assert_eq!(parsed.name, "a");
        assert!(parse_frontmatter(b"---\nname: a\n").is_err());
        assert!(parse_frontmatter(b"name: a\n---\n").is_err());
    }
}
