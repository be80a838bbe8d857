// An MCP server as the official TypeScript SDK 1.x (@modelcontextprotocol/sdk, MCP up to
// 2025-11-25) serves one over streamable HTTP, the way its documentation shows: node's HTTP
// server on 127.0.0.1, and a `StreamableHTTPServerTransport` with sessions (a new transport and
// server for each request without a session, which the SDK accepts only for `initialize`).
//
// The Rust test (tests/suite/mcp_2026_http.rs) installs the SDK from npm and starts:
//   node http_server.mjs PREFIX EVIDENCE PORT_FILE
// PREFIX is where npm installed the SDK (its node_modules); EVIDENCE gets one JSON line per HTTP
// request once it is answered: {"http", "method", "offered", "session", "status"} (`method`: the
// JSON-RPC method POSTed, or null; `offered`: the revision an `initialize` offers; `session`:
// whether the request named a session; `status`: the HTTP status answered). PORT_FILE gets the
// port once the server listens.
// Tools:
//   echo {text}        answers TEXT

import { randomUUID } from "node:crypto";
import { appendFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [prefix, evidencePath, portFile] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(prefix, "node_modules", path)).href);
const { McpServer } = await load("@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StreamableHTTPServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js");
const z = await load("zod/v4/index.js");

const note = (line) => appendFileSync(evidencePath, JSON.stringify(line) + "\n");

const newServer = () => {
  const server = new McpServer({ name: "ts-sdk-http-server", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns the text it is given.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
};

const transports = new Map();
const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  let body;
  try {
    body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
  } catch {}
  const session = req.headers["mcp-session-id"];
  res.on("finish", () =>
    note({
      http: req.method,
      method: body?.method ?? null,
      offered: body?.method === "initialize" ? body.params?.protocolVersion ?? null : null,
      session: session !== undefined,
      status: res.statusCode,
    }),
  );
  let transport = session === undefined ? undefined : transports.get(session);
  if (transport === undefined) {
    const fresh = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, fresh),
    });
    await newServer().connect(fresh);
    transport = fresh;
  }
  await transport.handleRequest(req, res, body);
});
server.listen(0, "127.0.0.1", () => writeFileSync(portFile, String(server.address().port)));
