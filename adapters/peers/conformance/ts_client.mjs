// Drives an MCP server with the official TypeScript SDK client (@modelcontextprotocol/sdk,
// pinned in package.json): lists the tools (after which the SDK checks every
// structuredContent against the tool's outputSchema, errors included), makes the calls
// given as JSON, and prints one JSON report for the Rust test to check:
//   {"tools": [..], "calls": [{"name", "result"} | {"name", "error"}]}
// Usage: node ts_client.mjs <url> <bearer token or ""> '<calls JSON>'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, callsJson] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: 'opkit-ts-sdk-test', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
const report = { protocolVersion: transport.protocolVersion, tools, calls: [] };
for (const call of JSON.parse(callsJson)) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
    report.calls.push({ name: call.name, result });
  } catch (error) {
    report.calls.push({ name: call.name, error: `${error?.code ?? ''} ${error?.message ?? error}` });
  }
}
await client.close();
console.log(JSON.stringify(report));
