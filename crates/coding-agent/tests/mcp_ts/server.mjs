// An MCP server as the official TypeScript SDK (@modelcontextprotocol/sdk) builds one, over stdio.
//
// The Rust test (tests/suite/mcp_ts.rs) installs the SDK from npm and names this file as the
// command of a server in mcp.json:
//   node server.mjs PREFIX EVIDENCE
// PREFIX is where npm installed the SDK (its node_modules); EVIDENCE gets one JSON line per
// protocol event: {"method"} for each message the client sends, and
// {"initialize": {"offered", "answered", "supported"}} when the client initializes (the revision
// the client offered, the one the SDK answered with, the SDK's list).
// Tools:
//   echo {text}        answers TEXT
//   add_tool {}        registers `late {text}` (answers "late: TEXT"); the SDK then sends
//                      notifications/tools/list_changed, before this call's answer

import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [prefix, evidencePath] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(prefix, "node_modules", path)).href);
const { McpServer } = await load("@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/stdio.js");
const { SUPPORTED_PROTOCOL_VERSIONS } = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
const z = await load("zod/v4/index.js");

const note = (line) => appendFileSync(evidencePath, JSON.stringify(line) + "\n");

const server = new McpServer({ name: "ts-sdk-server", version: "1.0.0" });
server.registerTool(
  "echo",
  { description: "Returns the text it is given.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);
server.registerTool(
  "add_tool",
  { description: "Adds the tool `late`.", inputSchema: {} },
  async () => {
    server.registerTool(
      "late",
      { description: "Answers late: TEXT.", inputSchema: { text: z.string() } },
      async ({ text }) => ({ content: [{ type: "text", text: `late: ${text}` }] }),
    );
    return { content: [{ type: "text", text: "added" }] };
  },
);

const transport = new StdioServerTransport();
await server.connect(transport);
// The revision offered and the one answered, seen on the wire (the SDK does not keep the offer).
let offered = null;
const receive = transport.onmessage;
transport.onmessage = (message, extra) => {
  if (message.method !== undefined) note({ method: message.method });
  if (message.method === "initialize") offered = message.params?.protocolVersion ?? null;
  receive(message, extra);
};
const send = transport.send.bind(transport);
transport.send = async (message, options) => {
  if (message.result?.protocolVersion !== undefined && offered !== null) {
    note({
      initialize: {
        offered,
        answered: message.result.protocolVersion,
        supported: SUPPORTED_PROTOCOL_VERSIONS,
      },
    });
  }
  return send(message, options);
};
