//! URI templates of MCP resource templates (RFC 6570 level 1 and reserved expansion):
//! `notes://{id}` or `file:///{+path}`, matched against the URIs clients read.

/// A parsed URI template: literal text and `{variables}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `{name}` matches one or more characters other than `/`, `?` and `#`; `{+name}`
    /// (reserved expansion) matches any.
    Variable {
        name: String,
        reserved: bool,
    },
}

impl UriTemplate {
    /// Parses `text`, or says what is wrong with it.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with('}') {
                return Err(format!("its resource URI {text:?} has a `}}` with no `{{`"));
            }
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| format!("its resource URI {text:?} has a `{{` with no `}}`"))?;
            let (name, reserved) = match after[..close].strip_prefix('+') {
                Some(name) => (name, true),
                None => (&after[..close], false),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "its resource URI {text:?} has an invalid variable `{{{name}}}`"
                ));
            }
            if matches!(parts.last(), Some(Part::Variable { .. })) {
                return Err(format!(
                    "its resource URI {text:?} has two variables with nothing between them"
                ));
            }
            parts.push(Part::Variable {
                name: name.to_owned(),
                reserved,
            });
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            text: text.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// `true` when the template has no variables (a plain URI).
    pub(crate) fn is_fixed(&self) -> bool {
        self.parts
            .iter()
            .all(|part| matches!(part, Part::Literal(_)))
    }

    /// The variables' names, in order.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' values when `uri` matches (percent-decoded), else `None`.
    pub(crate) fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        match_parts(&self.parts, uri, &mut values).then_some(values)
    }
}

/// Matches `parts` against all of `uri`, pushing variable values; backtracks over where a
/// variable ends.
fn match_parts(parts: &[Part], uri: &str, values: &mut Vec<(String, String)>) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(literal) => uri
            .strip_prefix(literal.as_str())
            .is_some_and(|tail| match_parts(rest, tail, values)),
        Part::Variable { name, reserved } => {
            let allowed = |c: char| *reserved || !matches!(c, '/' | '?' | '#');
            let longest = uri.find(|c| !allowed(c)).unwrap_or(uri.len());
            // The variable takes 1..=longest bytes (at char boundaries), shortest first.
            for (end, _) in uri[..longest]
                .char_indices()
                .skip(1)
                .chain(std::iter::once((longest, ' ')))
            {
                if end == 0 {
                    continue;
                }
                let before = values.len();
                values.push((name.clone(), decode(&uri[..end])));
                if match_parts(rest, &uri[end..], values) {
                    return true;
                }
                values.truncate(before);
            }
            false
        }
    }
}

/// Percent-decodes `text` (kept as it is where the escapes are not UTF-8).
fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map_or_else(|_| text.to_owned(), |decoded| decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template).unwrap().matches(uri)
    }

    #[test]
    fn variables_match_one_segment_and_reserved_ones_any() {
        assert_eq!(
            vars("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            vars("file:///{+path}", "file:///a/b%20c.txt"),
            Some(vec![("path".into(), "a/b c.txt".into())])
        );
        assert_eq!(
            vars("notes://{owner}/{id}", "notes://ann/7"),
            Some(vec![
                ("owner".into(), "ann".into()),
                ("id".into(), "7".into())
            ])
        );
        assert_eq!(vars("notes://{id}", "notes://"), None);
        assert_eq!(vars("test://static", "test://static"), Some(vec![]));
        assert_eq!(vars("test://static", "test://static/x"), None);
    }

    #[test]
    fn bad_templates_are_refused() {
        for bad in ["a://{", "a://}", "a://{x-y}", "a://{}", "a://{a}{b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
        let fixed = UriTemplate::parse("test://static-text").unwrap();
        assert!(fixed.is_fixed());
        assert_eq!(fixed.variables().count(), 0);
    }
}
