// A real Matrix client sending through nginx + mxlimitd: matrix-js-sdk's own
// MatrixScheduler (which createClient installs) queues m.room.message events
// and retries one that was rate-limited after the wait the server asked for.
// No startClient: sending needs no sync, and the scheduler runs without it.
//
// Every HTTP exchange goes through the fetchFn handed to createClient, which
// records when each request left, when its answer arrived, its status and,
// for a 429, Retry-After and retry_after_ms. The report is written as JSON to
// --out for tests/daemon/e2e/test_jsclient.py to judge.
//
//   node send_messages.mjs --base-url URL --token T --user-id @u:s
//                          --room-id '!r:s' --count N --out report.json

import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

import * as sdk from "matrix-js-sdk";
import { logger } from "matrix-js-sdk/lib/logger.js";

const { values: args } = parseArgs({
  options: {
    "base-url": { type: "string" },
    token: { type: "string" },
    "user-id": { type: "string" },
    "room-id": { type: "string" },
    count: { type: "string" },
    out: { type: "string" },
  },
});
for (const name of ["base-url", "token", "user-id", "room-id", "count", "out"]) {
  if (!args[name]) {
    console.error(`send_messages.mjs: --${name} is required`);
    process.exit(2);
  }
}
logger.setLevel("warn");

const t0 = performance.now();
const exchanges = [];

async function recordingFetch(resource, init) {
  const entry = {
    method: init?.method ?? "GET",
    url: String(resource instanceof Request ? resource.url : resource),
    sentMs: performance.now() - t0,
  };
  exchanges.push(entry);
  try {
    const response = await fetch(resource, init);
    entry.answeredMs = performance.now() - t0;
    entry.status = response.status;
    entry.retryAfter = response.headers.get("retry-after");
    if (response.status === 429) {
      entry.body = await response.clone().json();
    }
    return response;
  } catch (e) {
    entry.error = String(e);
    throw e;
  }
}

const client = sdk.createClient({
  baseUrl: args["base-url"],
  accessToken: args.token,
  userId: args["user-id"],
  fetchFn: recordingFetch,
});
if (!client.getScheduler()) {
  console.error("send_messages.mjs: createClient installed no scheduler; nothing would retry");
  process.exit(1);
}

const count = Number(args.count);
const sends = [];
for (let i = 0; i < count; i++) {
  sends.push(client.sendMessage(args["room-id"], { msgtype: "m.text", body: `message ${i}` }));
}
const settled = await Promise.allSettled(sends);
const results = settled.map((s) =>
  s.status === "fulfilled"
    ? { ok: true, eventId: s.value.event_id }
    : { ok: false, error: `${s.reason?.name}: ${s.reason?.message}`, httpStatus: s.reason?.httpStatus },
);
client.stopClient();
writeFileSync(args.out, JSON.stringify({ exchanges, results }, null, 2));
process.exit(0);
