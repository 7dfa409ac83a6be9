//! Where the attribute sits: whether its fn is an item of an `impl` or `trait` block.
//!
//! An attribute sees only its own item, and an operation cannot live in an `impl` block (its
//! handle is a struct), where its expansion would fail with errors about generated code. So
//! the macro reads the source file of the attribute and finds the block around it. This is
//! a hint only: when the file cannot be read (an IDE, remapped paths, code made by another
//! macro), nothing is detected and the expansion proceeds as usual.
//!
//! Kept because the plain compiler errors are worse. For `ui-tests/fail/associated_fn.rs`
//! (an operation inside `impl Calculator`), this module gives one error on the fn's name
//! with the fix (move it out, or call the method from a free `#[operation]` fn); without it
//! rustc reports five, none of them the cause: "struct is not supported in `trait`s or
//! `impl`s" and "`const` items in this context need a name" on the attribute, then "cannot
//! find type / value / function `add`", the last suggesting `.add(b` on an `i64`.
//! `ui-tests/fail/trait_fn.rs` pins the same for a `trait`.

/// The kind of block an item sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Block {
    /// `impl .. { }`.
    Impl,
    /// `trait .. { }`.
    Trait,
    /// A module, a fn body, or anything else that holds items.
    Other,
}

/// The block around the attribute at `span`, if its source file can be read.
///
/// The file is scanned once per compilation, not once per operation (a file of `n`
/// operations would cost `n` scans): its text is read each time, which is cheap, and its
/// [`Blocks`] are reused while the text is the same.
pub(crate) fn of(span: proc_macro::Span) -> Option<Block> {
    let path = span.local_file()?;
    let text = std::fs::read_to_string(path).ok()?;
    let (line, column) = (span.line(), span.column());
    Some(SCANNED.with(|scanned| {
        let mut scanned = scanned.borrow_mut();
        if let Some((_, blocks)) = scanned.iter().find(|(seen, _)| *seen == text) {
            return blocks.at(line, column);
        }
        let blocks = Blocks::of(&text);
        let block = blocks.at(line, column);
        if scanned.len() == SCANNED_FILES {
            scanned.remove(0);
        }
        scanned.push((text, blocks));
        block
    }))
}

/// How many files' [`Blocks`] are kept.
const SCANNED_FILES: usize = 8;

thread_local! {
    /// The files scanned last (their text) and their blocks.
    static SCANNED: std::cell::RefCell<Vec<(String, Blocks)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The block around the position `line`:`column` (1-based) of `text`.
#[cfg(test)]
pub(crate) fn around(text: &str, line: usize, column: usize) -> Block {
    Blocks::of(text).at(line, column)
}

/// The blocks of a source file: after each `{` or `}` (by position), the innermost block.
pub(crate) struct Blocks(Vec<((usize, usize), Block)>);

impl Blocks {
    fn of(text: &str) -> Self {
        let mut changes = Vec::new();
        let mut blocks: Vec<Block> = Vec::new();
        let mut header: Vec<&str> = Vec::new();
        let mut nesting = 0usize;
        for token in Tokens::new(text) {
            match token.text {
                "{" => {
                    blocks.push(classify(&header));
                    header.clear();
                    nesting = 0;
                }
                "}" => {
                    blocks.pop();
                    header.clear();
                    nesting = 0;
                }
                ";" => {
                    header.clear();
                    nesting = 0;
                    continue;
                }
                "(" | "[" => {
                    nesting += 1;
                    continue;
                }
                ")" | "]" => {
                    nesting = nesting.saturating_sub(1);
                    continue;
                }
                word if nesting == 0
                    && word.starts_with(|c: char| c.is_alphanumeric() || c == '_') =>
                {
                    header.push(word);
                    continue;
                }
                _ => continue,
            }
            let innermost = blocks.last().copied().unwrap_or(Block::Other);
            changes.push(((token.line, token.column), innermost));
        }
        Self(changes)
    }

    /// The block around the position `line`:`column`: the innermost one after the last `{`
    /// or `}` before it.
    fn at(&self, line: usize, column: usize) -> Block {
        let before = self.0.partition_point(|(at, _)| *at < (line, column));
        before
            .checked_sub(1)
            .map_or(Block::Other, |last| self.0[last].1)
    }
}

/// What a block is, from the words before its `{` (outside attributes and parentheses).
fn classify(header: &[&str]) -> Block {
    let first = header
        .iter()
        .find(|word| !matches!(**word, "pub" | "unsafe" | "default"));
    match first {
        Some(&"impl") => Block::Impl,
        Some(&"trait") => Block::Trait,
        _ => Block::Other,
    }
}

/// One token that matters for finding blocks: a word or one punctuation character.
struct Token<'a> {
    text: &'a str,
    /// 1-based, as `proc_macro::Span::line`.
    line: usize,
    /// 1-based, as `proc_macro::Span::column`.
    column: usize,
}

/// The words and punctuation of Rust source, without comments and literals.
struct Tokens<'a> {
    text: &'a str,
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    line: usize,
    line_start: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            chars: text.char_indices().peekable(),
            line: 1,
            line_start: 0,
        }
    }

    fn bump(&mut self) -> Option<(usize, char)> {
        let (index, c) = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.line_start = index + 1;
        }
        Some((index, c))
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|&(_, c)| c)
    }

    /// Skips to the end of a `"` string (the opening quote is consumed).
    fn skip_string(&mut self) {
        while let Some((_, c)) = self.bump() {
            match c {
                '\\' => {
                    self.bump();
                }
                '"' => return,
                _ => {}
            }
        }
    }

    /// Skips a raw string after its `r`: `#`s, `"`, the text, `"` and as many `#`s.
    fn skip_raw_string(&mut self) {
        let mut hashes = 0;
        while self.peek() == Some('#') {
            self.bump();
            hashes += 1;
        }
        if self.peek() != Some('"') {
            return;
        }
        self.bump();
        while let Some((_, c)) = self.bump() {
            if c == '"' {
                let mut closing = 0;
                while closing < hashes && self.peek() == Some('#') {
                    self.bump();
                    closing += 1;
                }
                if closing == hashes {
                    return;
                }
            }
        }
    }

    /// Skips a block comment (its `/*` consumed), nested ones included.
    fn skip_block_comment(&mut self) {
        let mut depth = 1;
        while let Some((_, c)) = self.bump() {
            match (c, self.peek()) {
                ('/', Some('*')) => {
                    self.bump();
                    depth += 1;
                }
                ('*', Some('/')) => {
                    self.bump();
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// After a `'`: skips a char literal, or leaves a lifetime's name to be read as a word.
    fn skip_quote(&mut self) {
        let mut ahead = self.chars.clone();
        match (ahead.next(), ahead.next()) {
            (Some((_, '\\')), _) => {
                self.bump();
                self.bump();
                while let Some((_, c)) = self.bump() {
                    if c == '\'' {
                        return;
                    }
                }
            }
            (Some(_), Some((_, '\''))) => {
                self.bump();
                self.bump();
            }
            _ => {}
        }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        loop {
            let (line, line_start) = (self.line, self.line_start);
            let (start, c) = self.bump()?;
            let column = start - line_start + 1;
            match c {
                '/' if self.peek() == Some('/') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                '/' if self.peek() == Some('*') => {
                    self.bump();
                    self.skip_block_comment();
                }
                '"' => self.skip_string(),
                '\'' => self.skip_quote(),
                c if c.is_alphanumeric() || c == '_' => {
                    let mut end = start + c.len_utf8();
                    while let Some(&(index, next)) = self.chars.peek() {
                        if !(next.is_alphanumeric() || next == '_') {
                            break;
                        }
                        end = index + next.len_utf8();
                        self.bump();
                    }
                    let word = &self.text[start..end];
                    // String prefixes: `r"..", r#".."#, b"..", br"..", c"..", cr".."`.
                    match (word, self.peek()) {
                        ("r" | "br" | "cr", Some('"' | '#')) => self.skip_raw_string(),
                        ("b" | "c", Some('"')) => {
                            self.bump();
                            self.skip_string();
                        }
                        ("b", Some('\'')) => {
                            self.bump();
                            self.skip_quote();
                        }
                        _ => {
                            return Some(Token {
                                text: word,
                                line,
                                column,
                            });
                        }
                    }
                }
                c if c.is_whitespace() => {}
                _ => {
                    let text = &self.text[start..start + c.len_utf8()];
                    return Some(Token { text, line, column });
                }
            }
        }
    }
}
