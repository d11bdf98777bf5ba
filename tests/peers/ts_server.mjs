// A small MCP server on the TypeScript SDK's McpServer, over stdio.
//
// Its tools make it send every notification kind the SDK lets a server send, so the
// relay has real TypeScript output to carry: logging at all levels, progress on the
// call's own token, resource list changed / updated, tool and prompt list changed,
// elicitation complete (when the client declares URL elicitation), a custom method,
// and strings cut inside a surrogate pair, as a JavaScript `slice` of an emoji makes
// them (JSON.stringify writes the lone half as a `\ud83d` escape).
//
//   node tests/peers/ts_server.mjs [--early]
//
// --early: write one logging notification right after connecting, before the client's
// initialize is answered (a server that logs at start-up does this).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const EMOJI = "😀"; // two UTF-16 code units: \ud83d \ude00

const server = new McpServer(
  { name: "diverge-codec-ts-peer", version: "1.0.0" },
  {
    capabilities: {
      logging: {},
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
    },
  },
);

server.registerResource(
  "report",
  "file:///srv/data/report.txt",
  { description: "A resource whose updates the server announces", mimeType: "text/plain" },
  async (uri) => ({ contents: [{ uri: uri.href, text: "report" }] }),
);

server.registerPrompt("greet", { description: "A prompt, so prompt list changes are real" }, async () => ({
  messages: [{ role: "user", content: { type: "text", text: "hello" } }],
}));

async function progress(extra, progress, total, message) {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return;
  const params = { progressToken, progress };
  if (total !== undefined) params.total = total;
  if (message !== undefined) params.message = message;
  await extra.sendNotification({ method: "notifications/progress", params });
}

server.registerTool(
  "emit_all",
  { description: "One of each notification kind this server can send" },
  async (extra) => {
    const inner = server.server;
    await progress(extra, 0, 4, "starting");
    server.sendToolListChanged();
    server.sendResourceListChanged();
    server.sendPromptListChanged();
    await inner.sendResourceUpdated({ uri: "file:///srv/data/report.txt" });
    for (const [depth, level] of LEVELS.entries()) {
      const data = { level, nested: { list: [1, 2.5, null, true, "é ✓ " + EMOJI], depth } };
      await server.sendLoggingMessage({ level, logger: "ts-peer", data });
    }
    await progress(extra, 1, 4);
    await server.sendLoggingMessage({ level: "info", data: "a plain string" });
    // Strings cut inside a surrogate pair: the high half alone, the low half alone, and
    // a preview cut at a fixed length that happens to split the emoji.
    await server.sendLoggingMessage({ level: "info", data: EMOJI.slice(0, 1) });
    await server.sendLoggingMessage({ level: "warning", logger: "ts-peer", data: { tail: EMOJI.slice(1) } });
    const preview = ("preview " + EMOJI + EMOJI).slice(0, 9);
    await server.sendLoggingMessage({ level: "notice", data: { preview, cut: true } });
    await progress(extra, 2, 4, "cut " + EMOJI.slice(0, 1));
    if (inner.getClientCapabilities()?.elicitation?.url !== undefined) {
      await inner.createElicitationCompletionNotifier("elicitation-1")();
    }
    await inner.notification({ method: "notifications/diverge/custom", params: { n: 1, ok: true } });
    await inner.notification({ method: "notifications/cancelled", params: { requestId: "client-9", reason: "superseded" } });
    await progress(extra, 4, 4, "done");
    return { content: [{ type: "text", text: "sent" }] };
  },
);

server.registerTool(
  "flood",
  {
    description: "count logging messages of about size bytes of data each, with progress every `every`",
    inputSchema: { count: z.number().int(), size: z.number().int().default(64), every: z.number().int().default(0) },
  },
  async ({ count, size, every }, extra) => {
    const filler = "x".repeat(size);
    for (let index = 0; index < count; index++) {
      await server.sendLoggingMessage({ level: "info", data: { index, filler } });
      if (every > 0 && (index + 1) % every === 0) await progress(extra, index + 1, count);
    }
    return { content: [{ type: "text", text: "flooded" }] };
  },
);

const transport = new StdioServerTransport();
await server.connect(transport);
if (process.argv.includes("--early")) {
  await server.sendLoggingMessage({ level: "info", logger: "ts-peer", data: "started, before initialize" });
}
