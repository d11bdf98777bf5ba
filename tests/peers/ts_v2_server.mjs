// A small MCP server on the TypeScript SDK v2 (@modelcontextprotocol/server), over stdio,
// served by `serveStdio`: dual-era by default (a 2026-07-28 opening is served statelessly,
// an `initialize` pins a 2025-era instance), modern-only with `--legacy reject`.
//
// Its tools make it send what a 2026-07-28 server can: progress and log messages on the
// call's own response (the log only when the request opted in with
// `io.modelcontextprotocol/logLevel`), the list changes and a resource update (which reach
// a client on its `subscriptions/listen` stream, or on a 2025 session as before), and an
// `input_required` answer; `routed` marks two parameters with `x-mcp-header` (mirrored over HTTP).
//
// With `--http PORT` it serves Streamable HTTP on 127.0.0.1:PORT/mcp instead, by `createMcpHandler`
// (dual-era: 2025-era requests served statelessly; `--legacy reject`: modern-only, a 2025-era
// request answered 400 with the -32022 error naming its revisions).
//
//   node tests/peers/ts_v2_server.mjs [--legacy reject] [--http PORT]
import { createServer } from "node:http";
import { Readable } from "node:stream";
import { McpServer, createMcpHandler, inputRequired } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const REPORT = "file:///srv/data/report.txt";
const option = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const legacy = option("--legacy") ?? "serve";
const port = option("--http");

function factory() {
  const server = new McpServer(
    { name: "diverge-codec-ts-v2-peer", version: "1.0.0" },
    {
      capabilities: {
        logging: {},
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
      },
    },
  );
  server.registerResource("report", REPORT, { description: "A resource whose updates the server announces", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, text: "report" }] }));
  server.registerPrompt("greet", { description: "A prompt, so prompt list changes are real" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "hello" } }],
  }));

  async function progress(ctx, value, total, message) {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    if (progressToken === undefined) return;
    const params = { progressToken, progress: value };
    if (total !== undefined) params.total = total;
    if (message !== undefined) params.message = message;
    await ctx.mcpReq.notify({ method: "notifications/progress", params });
  }

  server.registerTool("emit_all", { description: "Progress, a log message at each level, every change notification" },
    async (ctx) => {
      await progress(ctx, 0, 3, "starting");
      for (const [depth, level] of LEVELS.entries()) {
        await ctx.mcpReq.log(level, { level, nested: { list: [1, 2.5, null, true, "é ✓"], depth } }, "ts-v2-peer");
      }
      await progress(ctx, 1, 3);
      server.sendToolListChanged();
      server.sendPromptListChanged();
      server.sendResourceListChanged();
      await server.server.sendResourceUpdated({ uri: REPORT });
      await progress(ctx, 2, 3, "changes sent");
      return { content: [{ type: "text", text: "sent" }] };
    });

  // Over HTTP a client mirrors `region` and `tier` into Mcp-Param-Region and Mcp-Param-Tier (x-mcp-header);
  // the SDK answers a call without them 400 -32020.
  server.registerTool("routed", {
    description: "Echoes its region; its schema marks region and tier with x-mcp-header",
    inputSchema: z.object({
      region: z.string().meta({ "x-mcp-header": "Region" }),
      tier: z.number().int().meta({ "x-mcp-header": "Tier" }),
      query: z.string(),
    }),
  }, async ({ region, tier }) => ({ content: [{ type: "text", text: `${region} ${tier}` }] }));

  server.registerTool("ask", { description: "Answers input_required (state only: the relay declares no capability to ask with)" },
    async () => inputRequired({ requestState: "ask-1" }));
  return server;
}

if (port === undefined) {
  serveStdio(factory, { legacy });
} else {
  const handler = createMcpHandler(factory, { legacy: legacy === "reject" ? "reject" : "stateless" });
  createServer(async (req, res) => {  // node's request to a fetch Request and back (no adapter package needed)
    const url = new URL(req.url, `http://${req.headers.host}`);
    if (url.pathname !== "/mcp") { res.writeHead(404).end(); return; }
    const body = req.method === "POST" ? Readable.toWeb(req) : undefined;
    const request = new Request(url, { method: req.method, headers: req.headers, body, duplex: "half" });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body === null) { res.end(); return; }
    for await (const chunk of response.body) res.write(chunk);
    res.end();
  }).listen(Number(port), "127.0.0.1");
}
