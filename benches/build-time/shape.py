"""The one operation shape of the build-time benchmarks (generate.py, first_build.py): a
4-field input struct and a 2-field output, serde and schemars derives on both, and the body
that computes the output."""


def types(i):
    return f"""
/// The input of operation {i}.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct In{i} {{
    /// A name.
    pub name: String,
    /// A count.
    pub count: u32,
    /// A flag.
    pub flag: bool,
    /// Tags.
    pub tags: Vec<String>,
}}

/// The output of operation {i}.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Out{i} {{
    /// An id.
    pub id: String,
    /// A total.
    pub total: u64,
}}
"""


def output(i):
    """The output of operation `i`, computed from `input` (an `In{i}`)."""
    return f"Out{i} {{ id: input.name, total: u64::from(input.count) + input.tags.len() as u64 + u64::from(input.flag) }}"
