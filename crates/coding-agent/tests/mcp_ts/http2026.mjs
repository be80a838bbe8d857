// An MCP server as the official TypeScript SDK v2 (@modelcontextprotocol/server, the release line
// that implements MCP 2026-07-28) serves one over streamable HTTP: `createMcpHandler`, the SDK's
// fetch-style handler (2026-07-28 per request, and 2025 requests in its stateless fallback),
// behind node's own HTTP server on 127.0.0.1.
//
// The Rust test (tests/suite/mcp_2026_http.rs) installs the SDK from npm and starts:
//   node http2026.mjs PREFIX EVIDENCE PORT_FILE
// PREFIX is where npm installed the SDK (its node_modules); EVIDENCE gets one JSON line per
// JSON-RPC message Elph POSTs, as the server reads it: {"method", "meta"} (`meta`: the request's
// `params._meta`, or null), and {"http": METHOD} for any other HTTP request. PORT_FILE gets the
// port once the server listens.
// Tools:
//   echo {text}     answers TEXT
//   roots {}        asks for the client's roots (an input-required result with `roots/list`) and
//                   answers with their URIs, one a line
//   ask {}          asks the user for a colour (form elicitation, input-required) and answers
//                   "colour: VALUE", or "ACTION" when the user did not accept
//   add_tool {}     registers `late {text}` (answers "late: TEXT") on every server instance made
//                   from then on, tells the clients listening with `subscriptions/listen` that the
//                   tools changed, and answers once a client lists the tools again. (The change
//                   comes on the listen stream, a response of its own, so without that wait the
//                   call's answer could reach the client first; the wait lets the test know the
//                   order.)

import { appendFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { registerTools } from "./tools2026.mjs";

const [prefix, evidencePath, portFile] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(prefix, "node_modules", path)).href);
const { McpServer, createMcpHandler, inputRequired, inputResponse } = await load("@modelcontextprotocol/server/dist/index.mjs");
const z = await load("zod/v4/index.js");

const note = (line) => appendFileSync(evidencePath, JSON.stringify(line) + "\n");

const makeFactory = (added) => {
  let lateAdded = false;
  const addLate = (server) =>
    server.registerTool(
      "late",
      { description: "Answers late: TEXT.", inputSchema: z.object({ text: z.string() }) },
      async ({ text }) => ({ content: [{ type: "text", text: `late: ${text}` }] }),
    );
  return () => {
    const server = new McpServer({ name: "ts-sdk-v2-server", version: "2.0.0" });
    registerTools(server, { z, inputRequired, inputResponse });
    server.registerTool(
      "add_tool",
      { description: "Adds the tool `late`.", inputSchema: z.object({}) },
      async () => {
        lateAdded = true;
        await added();
        return { content: [{ type: "text", text: "added" }] };
      },
    );
    if (lateAdded) addLate(server);
    return server;
  };
};

let handler;
const awaitingListing = [];
const build = makeFactory(() => {
  const listed = new Promise((resolve) => awaitingListing.push(resolve));
  handler.notify.toolsChanged();
  return listed;
});
handler = createMcpHandler(build, { onerror: (error) => process.stderr.write(`${error}\n`) });

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  if (req.method === "POST") {
    let messages = [];
    try {
      const parsed = JSON.parse(body.toString("utf8"));
      messages = Array.isArray(parsed) ? parsed : [parsed];
    } catch {}
    for (const message of messages) {
      if (message?.method !== undefined) {
        note({ method: message.method, meta: message.params?._meta ?? null });
        if (message.method === "tools/list") awaitingListing.splice(0).forEach((resolve) => resolve());
      }
    }
  } else {
    note({ http: req.method });
  }
  // The client going away ends the exchange (a `subscriptions/listen` stream stays open until then).
  const gone = new AbortController();
  res.on("close", () => gone.abort());
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const each of Array.isArray(value) ? value : [value]) headers.append(name, each);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? body : undefined,
    signal: gone.signal,
  });
  try {
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.flushHeaders();
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (error) {
    if (!res.headersSent) res.writeHead(500);
    res.end();
    if (!gone.signal.aborted) process.stderr.write(`${error}\n`);
  }
});
server.listen(0, "127.0.0.1", () => writeFileSync(portFile, String(server.address().port)));
