// An MCP client that signs in by itself, with the official TypeScript SDK: it connects to
// <url> with no token, follows the server's 401 to its Protected Resource Metadata, discovers
// the authorization server there, gets a token with the client-credentials grant, lists the
// tools and makes the calls given as JSON. Prints one JSON report for the Rust test:
//   {"tools": [names], "calls": [{"name", "result"} | {"name", "error"}]}
// Usage: node mcp_client.mjs <url> <client id> <client secret> <scope or ""> '<calls JSON>'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const [url, clientId, clientSecret, scope, callsJson] = process.argv.slice(2);
const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, scope: scope || undefined });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
const client = new Client({ name: 'opkit-oauth-test', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
const report = { tools: tools.map((tool) => tool.name), calls: [] };
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
