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


def opkit_operation(i, namespace):
    """Operation `i` as an `#[operation]` fn in `namespace`, taking its input whole."""
    return f"""
/// Operation {i}.
#[operation(namespace = "{namespace}")]
pub async fn op{i}(input: Input<In{i}>) -> Out{i} {{
    let input = input.0;
    {output(i)}
}}
"""


def opkit_fields_operation(i, namespace):
    """Operation `i` as an `#[operation]` fn in `namespace` taking the input's four fields as
    parameters (the same input schema, one parameter per field)."""
    return f"""
/// Operation {i}.
#[operation(namespace = "{namespace}")]
pub async fn op{i}(name: String, count: u32, flag: bool, tags: Vec<String>) -> Out{i} {{
    let input = In{i} {{ name, count, flag, tags }};
    {output(i)}
}}
"""


def axum_handler(i, doc):
    """Operation `i` as an axum handler taking and returning `Json`, documented as `doc`."""
    return f"""
/// {doc}
pub async fn op{i}(Json(input): Json<In{i}>) -> Json<Out{i}> {{
    Json({output(i)})
}}
"""


def rmcp_server(n, namespace, json, doc="The server.", derive=""):
    """An rmcp `Server` with `n` `#[tool]` methods named `<namespace>_op<i>`, each returning
    its output wrapped in `json` (rmcp's `Json`, under the name the file imports it as)."""
    out = [f"""
/// {doc}
{derive}pub struct Server {{
    tool_router: ToolRouter<Self>,
}}

impl Default for Server {{
    fn default() -> Self {{
        Self {{ tool_router: Self::tool_router() }}
    }}
}}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {{}}

#[tool_router]
impl Server {{
"""]
    for i in range(n):
        out.append(f"""
    /// Operation {i}.
    #[tool(name = "{namespace}_op{i}", description = "Operation {i}")]
    async fn op{i}(&self, Parameters(input): Parameters<In{i}>) -> {json}<Out{i}> {{
        {json}({output(i)})
    }}
""")
    out.append("}\n")
    return "".join(out)
