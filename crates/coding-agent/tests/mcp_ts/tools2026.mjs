// The tools both test servers of MCP 2026-07-28 offer (server2026.mjs over stdio, http2026.mjs over
// streamable HTTP): `echo`, `roots` and `ask`, as their headers describe. The SDK's pieces come
// from the caller, which loads them from where npm installed them.
export const registerTools = (server, { z, inputRequired, inputResponse }) => {
  server.registerTool(
    "echo",
    { description: "Returns the text it is given.", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "roots",
    { description: "Answers with the client's roots.", inputSchema: z.object({}) },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, "roots");
      if (answer.kind !== "roots") {
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      }
      return { content: [{ type: "text", text: answer.roots.map((root) => root.uri).join("\n") }] };
    },
  );
  server.registerTool(
    "ask",
    { description: "Asks the user for a colour.", inputSchema: z.object({}) },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, "colour");
      if (answer.kind !== "elicit") {
        return inputRequired({
          inputRequests: {
            colour: inputRequired.elicit({
              message: "Which colour?",
              requestedSchema: z.object({ colour: z.string() }),
            }),
          },
        });
      }
      const text = answer.action === "accept" ? `colour: ${answer.content?.colour}` : answer.action;
      return { content: [{ type: "text", text }] };
    },
  );
};
