// An editor as the official ACP TypeScript SDK builds one, driving the real `elph acp` over stdio.
//
// The Rust test (tests/suite/acp_ts.rs) installs the SDK from npm, writes a scenario and runs
//   node client.mjs SDK_ENTRY SCENARIO REPORT WIRE
// SDK_ENTRY is the SDK's v1 entry point (dist/v1/stable/acp.js). SCENARIO holds:
//   command, args, env  how to start `elph acp`
//   initialize          the initialize params (the client's capabilities)
//   buffers             path -> text: the editor's open, unsaved buffers (fs/read_text_file
//                       answers from them first, then from the disk; fs/write_text_file writes
//                       into them and never to the disk, so a test can tell who wrote a file)
//   permissions         [{ titleContains, kind }]: the option kind to pick for a matching
//                       permission request (first match; default allow_once)
//   elicitation         the answer to every elicitation/create (default: decline)
//   steps               [{ method, params, as }]: requests in order; "${name.a.b}" in a string
//                       is replaced by that field of the result saved `as` name
// The report lists each step's result or error, every session/update, every fs request and
// permission request and elicitation. WIRE gets every line exchanged, as {"dir": "in"|"out", "line": ...}, so the
// test can validate each message against the ACP schema shipped with the same SDK.

import { spawn } from "node:child_process";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkEntry, scenarioPath, reportPath, wirePath] = process.argv.slice(2);
const acp = await import(pathToFileURL(sdkEntry).href);
const scenario = JSON.parse(readFileSync(scenarioPath, "utf8"));

const report = { results: [], updates: [], reads: [], writes: [], permissions: [], elicitations: [], stderr: "" };
const buffers = new Map(Object.entries(scenario.buffers ?? {}));
writeFileSync(wirePath, "");

// Records whole lines as they pass, in either direction.
function recorder(dir) {
  let partial = "";
  const decoder = new TextDecoder();
  return (bytes) => {
    partial += decoder.decode(bytes, { stream: true });
    let newline;
    while ((newline = partial.indexOf("\n")) >= 0) {
      const line = partial.slice(0, newline);
      partial = partial.slice(newline + 1);
      if (line.trim() !== "") {
        appendFileSync(wirePath, JSON.stringify({ dir, line }) + "\n");
      }
    }
  };
}

const child = spawn(scenario.command, scenario.args, {
  env: scenario.env,
  cwd: scenario.cwd,
  stdio: ["pipe", "pipe", "pipe"],
});
child.stderr.on("data", (chunk) => {
  report.stderr += chunk.toString();
});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const recordIn = recorder("in");
const fromAgent = Readable.toWeb(child.stdout).pipeThrough(
  new TransformStream({
    transform(chunk, controller) {
      recordIn(chunk);
      controller.enqueue(chunk);
    },
  }),
);
const recordOut = recorder("out");
const agentStdin = Writable.toWeb(child.stdin);
const writer = agentStdin.getWriter();
const toAgent = new WritableStream({
  async write(chunk) {
    recordOut(chunk);
    await writer.write(chunk);
  },
  async close() {
    await writer.close();
  },
});

function pick(options, title) {
  const rule = (scenario.permissions ?? []).find((rule) => title.includes(rule.titleContains));
  const kind = rule?.kind ?? "allow_once";
  return options.find((option) => option.kind === kind) ?? options.find((option) => option.kind.startsWith("reject"));
}

const app = acp
  .client({ name: "elph-ts-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    report.updates.push(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    report.permissions.push(params);
    const option = pick(params.options, params.toolCall.title ?? "");
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    report.reads.push(params);
    if (buffers.has(params.path)) {
      return { content: buffers.get(params.path) };
    }
    try {
      return { content: readFileSync(params.path, "utf8") };
    } catch (error) {
      throw acp.RequestError.invalidParams(undefined, `cannot open ${params.path}: ${error.code}`);
    }
  })
  .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
    report.elicitations.push(params);
    return scenario.elicitation ?? { action: "decline" };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    report.writes.push(params);
    buffers.set(params.path, params.content);
    return {};
  });

function substitute(value, saved) {
  if (typeof value === "string") {
    const whole = value.match(/^\$\{([^}]+)\}$/);
    if (whole) {
      return whole[1].split(".").reduce((object, key) => object?.[key], saved);
    }
    return value;
  }
  if (Array.isArray(value)) {
    return value.map((item) => substitute(item, saved));
  }
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, saved)]));
  }
  return value;
}

try {
  await app.connectWith(acp.ndJsonStream(toAgent, fromAgent), async (agent) => {
    const saved = {};
    const init = await agent.request(acp.methods.agent.initialize, scenario.initialize);
    report.results.push({ method: "initialize", ok: init });
    for (const step of scenario.steps) {
      const params = substitute(step.params, saved);
      try {
        const result = await agent.request(step.method, params);
        report.results.push({ method: step.method, ok: result ?? null });
        if (step.as) {
          saved[step.as] = result;
        }
      } catch (error) {
        report.results.push({
          method: step.method,
          error: { code: error.code ?? null, message: String(error.message ?? error), data: error.data ?? null },
        });
      }
    }
  });
} finally {
  child.stdin.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  report.exit = await exited;
  clearTimeout(timer);
  report.buffers = Object.fromEntries(buffers);
  writeFileSync(reportPath, JSON.stringify(report, null, 2));
}
