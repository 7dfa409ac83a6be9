// Drives an MCP server's resources, prompts, completion and elicitation with the official
// TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json), declaring the
// elicitation capability and answering every question with the content given, and prints
// one JSON report for the Rust test to check:
//   {"protocolVersion", "resources", "templates", "read", "prompts", "prompt", "completion",
//    "completion2", .., "questions": [..], "calls": [{"name", "result"} | {"name", "error"}]}
// Usage: node ts_surface.mjs <url> '<plan JSON>'
//   plan: {"read": uri, "prompt": {"name", "arguments"},
//          "complete": {"ref", "argument", "context"?} or a list of them,
//          "answer": {..}, "calls": [{"name", "arguments"}]}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, planJson] = process.argv.slice(2);
const plan = JSON.parse(planJson);
const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client(
  { name: 'opkit-ts-sdk-surface', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } } }
);
const report = { questions: [], calls: [] };
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  report.questions.push(request.params);
  return { action: 'accept', content: plan.answer };
});
await client.connect(transport);
report.protocolVersion = transport.protocolVersion;
const attempt = async (key, run) => {
  try {
    report[key] = await run();
  } catch (error) {
    report[key] = { error: `${error?.code ?? ''} ${error?.message ?? error}` };
  }
};
await attempt('resources', () => client.listResources());
await attempt('templates', () => client.listResourceTemplates());
await attempt('read', () => client.readResource({ uri: plan.read }));
await attempt('prompts', () => client.listPrompts());
await attempt('prompt', () => client.getPrompt(plan.prompt));
const completions = Array.isArray(plan.complete) ? plan.complete : [plan.complete];
for (const [index, complete] of completions.entries()) {
  await attempt(index === 0 ? 'completion' : `completion${index + 1}`, () => client.complete(complete));
}
for (const call of plan.calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
    report.calls.push({ name: call.name, result });
  } catch (error) {
    report.calls.push({ name: call.name, error: `${error?.code ?? ''} ${error?.message ?? error}` });
  }
}
await client.close();
console.log(JSON.stringify(report));
