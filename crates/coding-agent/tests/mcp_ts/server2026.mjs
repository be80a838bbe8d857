// An MCP server as the official TypeScript SDK v2 (@modelcontextprotocol/server, the release line
// that implements MCP 2026-07-28) builds one, over stdio, with `serveStdio`: the opening message
// picks the revision (`server/discover` for 2026-07-28, `initialize` for the 2025 revisions).
//
// The Rust test (tests/suite/mcp_2026.rs) installs the SDK from npm and names this file as the
// command of a server in mcp.json:
//   node server2026.mjs PREFIX EVIDENCE [DELAY_MS]
// PREFIX is where npm installed the SDK (its node_modules); EVIDENCE gets one JSON line per
// message Elph sends: {"method", "meta"} (`meta`: the request's `params._meta`, or null).
// DELAY_MS, if given, is how long the server waits before it reads its first message (a slow
// start: the message waits in the pipe).
// Tools:
//   echo {text}     answers TEXT
//   roots {}        asks for the client's roots (an input-required result with `roots/list`) and
//                   answers with their URIs, one a line
//   ask {}          asks the user for a colour (form elicitation, input-required) and answers
//                   "colour: VALUE", or "ACTION" when the user did not accept
//   add_tool {}     registers `late {text}` (answers "late: TEXT"); the SDK then sends
//                   notifications/tools/list_changed to listening clients
//   change_offers {} registers the prompt `late` (the user message "The late prompt."), disables
//                   the prompt `where`, and registers the resource `ts://late` ("late resource
//                   text"); the SDK then sends notifications/prompts/list_changed and
//                   notifications/resources/list_changed to listening clients
// Prompt:
//   where           asks for the client's roots (input-required) and answers with the user
//                   message "Work in URI." for the first
// Resources:
//   ts://where      asks for the client's roots (input-required) before it gives its text,
//                   "Resource for URI." for the first
//   ts://colour     asks the user for a colour (form elicitation, input-required) before it gives
//                   its text, "resource colour: VALUE", or "resource ACTION" when the user did
//                   not accept

import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { registerTools } from "./tools2026.mjs";

const [prefix, evidencePath, delay] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(prefix, "node_modules", path)).href);
const { McpServer, inputRequired, inputResponse } = await load("@modelcontextprotocol/server/dist/index.mjs");
const { serveStdio, StdioServerTransport } = await load("@modelcontextprotocol/server/dist/stdio.mjs");
const z = await load("zod/v4/index.js");

const note = (line) => appendFileSync(evidencePath, JSON.stringify(line) + "\n");

const servers = [];
const build = () => {
  const server = new McpServer({ name: "ts-sdk-v2-server", version: "2.0.0" });
  registerTools(server, { z, inputRequired, inputResponse });
  const wherePrompt = server.registerPrompt(
    "where",
    { description: "Says where to work." },
    async (ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, "roots");
      if (answer.kind !== "roots") {
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      }
      const text = `Work in ${answer.roots[0]?.uri}.`;
      return { messages: [{ role: "user", content: { type: "text", text } }] };
    },
  );
  server.registerResource(
    "where",
    "ts://where",
    { description: "Where the client works (asks for its roots first).", mimeType: "text/plain" },
    async (uri, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, "roots");
      if (answer.kind !== "roots") {
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      }
      const text = `Resource for ${answer.roots[0]?.uri}.`;
      return { contents: [{ uri: uri.href, mimeType: "text/plain", text }] };
    },
  );
  server.registerResource(
    "colour",
    "ts://colour",
    { description: "A colour the user picks (asks the user first).", mimeType: "text/plain" },
    async (uri, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, "colour");
      if (answer.kind !== "elicit") {
        return inputRequired({
          inputRequests: {
            colour: inputRequired.elicit({
              message: "Which colour for the resource?",
              requestedSchema: z.object({ colour: z.string() }),
            }),
          },
        });
      }
      const text = answer.action === "accept"
        ? `resource colour: ${answer.content?.colour}`
        : `resource ${answer.action}`;
      return { contents: [{ uri: uri.href, mimeType: "text/plain", text }] };
    },
  );
  server.registerTool(
    "change_offers",
    { description: "Adds the prompt `late` and the resource ts://late, disables the prompt `where`.", inputSchema: z.object({}) },
    async () => {
      for (const each of servers) {
        each.server.registerPrompt(
          "late",
          { description: "A prompt added late." },
          async () => ({ messages: [{ role: "user", content: { type: "text", text: "The late prompt." } }] }),
        );
        each.wherePrompt.disable();
        each.server.registerResource(
          "late",
          "ts://late",
          { description: "A resource added late.", mimeType: "text/plain" },
          async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "late resource text" }] }),
        );
      }
      return { content: [{ type: "text", text: "changed" }] };
    },
  );
  server.registerTool(
    "add_tool",
    { description: "Adds the tool `late`.", inputSchema: z.object({}) },
    async () => {
      for (const { server: each } of servers) {
        each.registerTool(
          "late",
          { description: "Answers late: TEXT.", inputSchema: z.object({ text: z.string() }) },
          async ({ text }) => ({ content: [{ type: "text", text: `late: ${text}` }] }),
        );
      }
      return { content: [{ type: "text", text: "added" }] };
    },
  );
  servers.push({ server, wherePrompt });
  return server;
};

if (delay !== undefined) await new Promise((resolve) => setTimeout(resolve, Number(delay)));
const transport = new StdioServerTransport();
// Every message Elph sends, as the server reads it.
const start = transport.start.bind(transport);
transport.start = async () => {
  const receive = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message.method !== undefined) {
      note({ method: message.method, meta: message.params?._meta ?? null });
    }
    receive(message, extra);
  };
  return start();
};
serveStdio(build, { transport });
