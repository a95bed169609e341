/**
 * The client against a running Synapse (the local server), driven by
 * tests/e2e/test_typescript_clients.py, which passes:
 *   SYNAPSE_URL        the local server
 *   SYNAPSE_JWT        a JWT of a fresh user (SYNAPSE_USER_ID)
 *   SYNAPSE_API_KEY    an agent API key (of another user)
 */
// node:assert, not jsr:@std/assert: only the npm registry is reachable from the test machines
import assert from "node:assert/strict";
import { isProposal, jwtSubject, Synapse, SynapseError, verifyWebhook } from "./mod.ts";
import type { ExportJob, ExportStarted, Memory, ProposalAnswer, RecallOut } from "./mod.ts";

const env = (name: string): string => {
  const value = Deno.env.get(name);
  if (!value) {
    throw new Error(`${name} is not set (run through tests/e2e/test_typescript_clients.py)`);
  }
  return value;
};
const baseUrl = env("SYNAPSE_URL");
const userId = env("SYNAPSE_USER_ID");
const synapse = new Synapse({ baseUrl, token: env("SYNAPSE_JWT") });
const agent = new Synapse({ baseUrl, token: env("SYNAPSE_API_KEY") });

const assertEquals: (actual: unknown, expected: unknown, message?: string) => void =
  assert.deepStrictEqual;
const assertMatch: (value: string, re: RegExp) => void = assert.match;

/** A person's write: always the memory (only an agent's change of a verified memory is a proposal). */
function written(answer: Memory | ProposalAnswer): Memory {
  assert(!isProposal(answer), `a proposal: ${JSON.stringify(answer)}`);
  return answer;
}

async function failure(call: Promise<unknown>): Promise<SynapseError> {
  try {
    await call;
  } catch (error) {
    assert(error instanceof SynapseError, `not a SynapseError: ${error}`);
    return error;
  }
  throw new assert.AssertionError({ message: "the call did not fail" });
}

Deno.test("a memory is stored, read, changed, listed, searched and recalled", async () => {
  const stored: Memory = written(
    await synapse.memories.create({
      category: "preference",
      key: "editor_theme",
      content: "Prefers the Solarized dark theme in every editor",
      tags: ["Editor", "theme"],
      priority: "high",
    }),
  );
  assertEquals(stored.user_id, userId);
  assertEquals(stored.source, "user");
  assertEquals(stored.tags, ["editor", "theme"]);
  assertEquals((await synapse.memories.get(stored.id)).content, stored.content);

  const changed = written(
    await synapse.memories.update(stored.id, {
      content: "Prefers the Nord dark theme in every editor",
    }),
  );
  assertEquals(changed.version, 2);
  const history = await synapse.memories.history(stored.id);
  assertEquals(history.versions.map((v) => v.version), [2, 1]);
  assertEquals(written(await synapse.memories.restore(stored.id, 1)).content, stored.content);

  const listed = await synapse.memories.list({ category: "preference" });
  assert(listed.memories.some((m) => m.id === stored.id));
  const all: Memory[] = [];
  for await (const m of synapse.memories.all({ limit: 1 })) all.push(m);
  assert(all.some((m) => m.id === stored.id));
  assert((await synapse.memories.byTag("EDITOR")).memories.some((m) => m.id === stored.id));
  assert((await synapse.memories.search("solarized")).memories[0].score > 0);

  const recalled: RecallOut = await synapse.recall({ query: "which editor theme?", limit: 3 });
  assertEquals(recalled.memories[0].id, stored.id);
  assertMatch(await synapse.recallText(), /editor_theme/);
});

Deno.test("a batch answers each item as alone; a mem0 import is skipped the second time", async () => {
  const answer = await synapse.memories.batch([
    { category: "fact", key: "home_city", content: "Lives in Chiang Mai" },
    { category: "fact", key: "Not A Key", content: "invalid" },
  ]);
  assertEquals(answer.results.map((r) => r.status), [201, 422]);
  assertEquals(answer.results[0].memory?.key, "home_city");
  assertEquals(answer.results[1].error?.error.code, "validation_error");
  const records = [{ id: "a1b2", memory: "Likes green tea", categories: ["food"] }];
  assertEquals((await synapse.memories.import({ format: "mem0", records })).imported, 1);
  assertEquals((await synapse.memories.import({ format: "mem0", records })).skipped, 1);
});

Deno.test("a chat turn: ingest in Thai and English, then context and identity", async () => {
  const sessionId = `ts-${crypto.randomUUID().slice(0, 8)}`;
  const turn = {
    sessionId,
    messages: [
      { role: "user" as const, content: "สวัสดีครับ ผมชื่อสมชาย อยู่เชียงใหม่" },
      { role: "assistant" as const, content: "ยินดีที่ได้รู้จักครับคุณสมชาย" },
      { role: "user" as const, content: "We are moving the billing service to Kubernetes" },
      { role: "user" as const, content: "ขอบคุณ" },
    ],
  };
  const ingested = await synapse.ingest(turn, { idempotencyKey: `${sessionId}-1` });
  assert(ingested.nuggets_created >= 2, JSON.stringify(ingested));
  assert(ingested.skipped_transient >= 1);
  // the same Idempotency-Key is the same ingest: its first answer again
  assertEquals(await synapse.ingest(turn, { idempotencyKey: `${sessionId}-1` }), ingested);

  const identity = await synapse.identity(); // the JWT's sub
  assertEquals(identity.userId, userId);
  assertMatch(identity.identity ?? "", /สมชาย/);

  const context = await synapse.context({ query: "Kubernetes billing", sessionId, recent: 5 });
  assertMatch(context.memories[0].text, /Kubernetes/);
  assertEquals(context.recent.length, 4);
  assertMatch(context.prompt, /^Current time: \d{4}-\d\d-\d\d \d\d:\d\d \(UTC\)\n\nIdentity:/);

  const summary = await synapse.summarize({ sessionId });
  assertMatch(summary.chunk_id, new RegExp(`^sum:${sessionId}:chunk_1$`));
  assertEquals((await synapse.summaries(sessionId)).summaries.length, 1);
});

Deno.test("time: a dated Thai conversation, recalled by its day, read as of a moment", async () => {
  const before = new Date(Date.now() - 5 * 60_000).toISOString();
  const sessionId = `ts-${crypto.randomUUID().slice(0, 8)}`;
  // said at 10:00 on 4 December 2026 in Bangkok
  const ingested = await synapse.ingest({
    sessionId,
    messages: [
      {
        role: "user",
        content: "เมื่อวานผมไปหาหมอฟันที่โรงพยาบาลศิริราช",
        created_at: "2026-12-04T10:00:00+07:00",
      },
    ],
    timezone: "Asia/Bangkok",
  });
  const dentist = ingested.nuggets.find((n) => n.content.includes("หมอฟัน"));
  assert(dentist, JSON.stringify(ingested));
  assertEquals(dentist.content, "ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)");
  assertEquals(dentist.valid_at, "2026-12-02T17:00:00Z"); // 00:00 on 3 December in Bangkok

  const asked = { reference_time: "2026-12-04T19:00:00+07:00", timezone: "Asia/Bangkok" };
  const found = await synapse.recall({ query: "เมื่อวานไปไหนมา", limit: 3, ...asked });
  const hit = found.memories.find((m) => m.id === dentist.id);
  assertEquals(hit?.valid_at, "2026-12-02T17:00:00Z");
  const context = await synapse.context({ query: "เมื่อวานไปไหนมา", ...asked });
  const lines = context.prompt.split("\n");
  assertEquals(lines[0], "Current time: 2026-12-04 19:00 (Asia/Bangkok)");
  assert(lines.includes("- (2026-12-03) ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)"), context.prompt);

  // as of a moment before the ingest, the mind held none of it
  assertEquals(
    (await failure(synapse.memories.get(dentist.id, { asOf: before }))).code,
    "not_found",
  );
  assertEquals((await synapse.memories.list({ as_of: before })).memories, []);
  assertEquals((await synapse.recall({ query: "หมอฟัน", as_of: before })).memories, []);
  const now = new Date().toISOString();
  assertEquals((await synapse.memories.get(dentist.id, { asOf: now })).content, dentist.content);
});

Deno.test("minds: a memory of one mind is not found from another", async () => {
  const mind = await synapse.minds.create({ name: `ts mind ${crypto.randomUUID().slice(0, 6)}` });
  const inMind = synapse.withMind(mind.mind_id);
  const m = written(
    await inMind.memories.create({ category: "fact", key: "queue", content: "L2 queue" }),
  );
  assertEquals(m.mind_id, mind.mind_id);
  assertEquals((await synapse.memories.get(m.id, { mindId: mind.mind_id })).id, m.id);
  assertEquals((await failure(synapse.memories.get(m.id))).code, "not_found");
  assertEquals((await synapse.minds.list()).minds[0].mind_id, "default");
  await synapse.minds.delete(mind.mind_id);
  assertEquals((await failure(inMind.memories.list())).status, 404);
});

Deno.test("a mind's timezone dates its memories, and the timeline lists them in time order", async () => {
  const mind = await synapse.minds.create({ name: `ts time ${crypto.randomUUID().slice(0, 6)}` });
  const patched = await synapse.minds.update(mind.mind_id, { timezone: "Asia/Bangkok" });
  assertEquals(patched.timezone, "Asia/Bangkok");
  assertEquals(
    (await failure(synapse.minds.update(mind.mind_id, { timezone: "Asia/Nowhere" }))).status,
    422,
  );
  const inMind = synapse.withMind(mind.mind_id);
  const later = written(
    await inMind.memories.create({
      category: "note",
      key: "meeting",
      content: "ประชุมที่เชียงราย",
      valid_at: "2025-12-05",
    }),
  );
  assertEquals(later.valid_at, "2025-12-04T17:00:00Z");
  const earlier = written(
    await inMind.memories.create({
      category: "note",
      key: "dentist",
      content: "ไปหาหมอฟัน",
      valid_at: "2025-12-03T09:00:00+07:00",
    }),
  );
  const page = await inMind.memories.timeline({ from: "2025-12-01", to: "2026-01-01", limit: 1 });
  assertEquals(page.memories.map((m) => m.id), [earlier.id]);
  const next = await inMind.memories.timeline({ cursor: page.next_cursor ?? "", to: "2026-01-01" });
  assertEquals(next.memories.map((m) => m.id), [later.id]);
  assertEquals(next.next_cursor, null);
  await synapse.minds.delete(mind.mind_id);
});

Deno.test("review: an agent's change of a verified memory awaits the person's yes", async () => {
  // the user's own agent (a key of hers) and her verified memory
  const key = await synapse.keys.create({
    name: "ts review agent",
    scopes: ["memory:read", "memory:write"],
  });
  const bot = new Synapse({ baseUrl, token: key.key });
  const mine = written(
    await synapse.memories.create({ category: "identity", key: "ts_nickname", content: "Som" }),
  );
  const answer = await bot.memories.update(mine.id, { content: "Somchai" });
  assert(isProposal(answer), JSON.stringify(answer));
  assertEquals((await synapse.memories.get(mine.id)).content, "Som");
  const pending = await synapse.proposals.list();
  assert(pending.proposals.some((p) => p.proposal_id === answer.proposal.proposal_id));
  assertEquals((await failure(bot.proposals.list())).status, 403);
  const accepted = await synapse.proposals.accept(answer.proposal.proposal_id, {
    content: "Somchai (Som)",
  });
  assertEquals(accepted?.content, "Somchai (Som)");
  assertEquals(accepted?.verified, true);
  const gone = await bot.memories.delete(mine.id);
  assert(isProposal(gone));
  await synapse.proposals.decline(gone.proposal.proposal_id);
  assertEquals((await synapse.memories.get(mine.id)).content, "Somchai (Som)");
  const done = await synapse.minds.consolidate("default");
  assertEquals(typeof done.consolidated, "number");
  await synapse.keys.delete(key.key_id);
});

Deno.test("keys, providers and export (GET /me/export)", async () => {
  const key = await synapse.keys.create({ name: "ts reader", scopes: ["memory:read"] });
  assert(key.key.startsWith("gts_live_"));
  const reader = new Synapse({ baseUrl, token: key.key });
  await reader.memories.list();
  const refused = await failure(
    reader.memories.create({ category: "note", key: "x", content: "y" }),
  );
  assertEquals([refused.status, refused.code], [403, "forbidden"]);
  assert((await synapse.keys.list()).keys.some((k) => k.key_id === key.key_id));
  await synapse.keys.delete(key.key_id);
  assertEquals((await failure(reader.memories.list())).code, "unauthorized");

  assertEquals((await synapse.providers.list()).providers, []);
  const exported = await synapse.export();
  assert(exported.memories.length >= 1);
});

Deno.test("an export of any size: asked for, waited on, downloaded without the token", async () => {
  const content = "ส่งออกทุกอย่าง\u2028ครบถ้วน";
  written(await synapse.memories.create({ category: "fact", key: "ts_export", content }));
  // a client whose every request is recorded, with a mind and a header of its own
  const sent: { url: string; headers: Headers }[] = [];
  const recorded = new Synapse({
    baseUrl,
    token: env("SYNAPSE_JWT"),
    mindId: "default",
    headers: { "x-team": "blue" },
    fetch: (input, init) => {
      sent.push({ url: String(input), headers: new Headers(init?.headers) });
      return fetch(input, init);
    },
  });
  const started: ExportStarted = await recorded.createExport();
  assertEquals(started.status, "pending");
  const seen: string[] = [];
  const job: ExportJob = await recorded.waitExport(started.export_id, {
    onStatus: (j) => seen.push(j.status),
  });
  assertEquals([seen.at(-1), job.status], ["ready", "ready"]);
  const response = await recorded.downloadExport(job);
  const bytes = new Uint8Array(await response.arrayBuffer());
  assertEquals(bytes.length, job.bytes);
  // JSON Lines: lines end at "\n" only (U+2028 stays inside a record's text)
  const lines = new TextDecoder().decode(bytes).split("\n").filter((l) => l).map((l) =>
    JSON.parse(l)
  );
  assertEquals(lines.length, (job.records ?? 0) + 1);
  assertEquals([lines[0].format, lines[0].version, lines[0].user_id], [
    "synapse-export",
    1,
    userId,
  ]);
  assert(lines.some((l) => l.type === "memory" && l.key === "ts_export" && l.content === content));
  // the download went to the presigned URL with nothing of the API's; the API calls had the token
  const download = sent.at(-1)!;
  assertEquals(download.url, job.url);
  for (const name of ["authorization", "x-mind-id", "x-team"]) {
    assertEquals(download.headers.get(name), null, name);
  }
  assert(sent.slice(0, -1).every((r) => r.headers.get("authorization")?.startsWith("Bearer ")));

  assertEquals((await failure(synapse.getExport("0".repeat(32)))).code, "not_found");
  assertEquals((await failure(agent.createExport())).status, 403); // users only
});

Deno.test("waitExport: a failed export and a wait that runs out are SynapseErrors", async () => {
  // stand-in servers: GET /me/exports/{id} answers these states in turn (the last one repeats)
  const answering = (...states: string[]): Synapse =>
    new Synapse({
      baseUrl,
      token: "t",
      fetch: (() =>
        Promise.resolve(
          Response.json({ status: states.length > 1 ? states.shift() : states[0] }),
        )) as typeof fetch,
    });
  const failed = await failure(answering("pending", "failed").waitExport("e1", { pollMs: 1 }));
  assertEquals([failed.status, failed.code], [0, "export_failed"]);
  const late = await failure(answering("pending").waitExport("e1", { maxWaitMs: 20, pollMs: 5 }));
  assertEquals([late.status, late.code], [0, "export_timeout"]);
  // the storage refusing a URL past its hour
  const gone = new Synapse({
    baseUrl,
    token: "t",
    fetch: (() => Promise.resolve(new Response("<Error/>", { status: 403 }))) as typeof fetch,
  });
  const expired = await failure(gone.downloadExport("http://127.0.0.1:1/file?X-Amz-Signature=s"));
  assertEquals([expired.status, expired.code], [403, "download_failed"]);
  assert(!expired.message.includes("X-Amz"));
  await assert.rejects(gone.downloadExport({ status: "pending" }), TypeError);
});

Deno.test("webhooks: a receiver gets a signed delivery, and the changes feed lists the write", async () => {
  // a receiver on this machine (the local run allows loopback)
  const received: { body: string; headers: Headers }[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    received.push({ body: await req.text(), headers: req.headers });
    return new Response("ok");
  });
  try {
    const hook = await synapse.webhooks.create({
      url: `http://127.0.0.1:${server.addr.port}/hook`,
      events: ["memory.created"],
    });
    assert(hook.secret.startsWith("whsec_"));
    const before = await synapse.memories.changes({ after: 0 });
    const memory = written(
      await synapse.memories.create({
        category: "fact",
        key: "ts_hooked",
        content: "Told by a webhook",
      }),
    );
    for (let i = 0; i < 150 && !received.length; i++) await new Promise((r) => setTimeout(r, 200));
    assertEquals(received.length, 1);
    const payload = await verifyWebhook<{ type: string; data: { memoryId: string } }>(
      hook.secret,
      received[0].body,
      received[0].headers,
    );
    assertEquals([payload.type, payload.data.memoryId], ["memory.created", memory.id]);
    const log = await synapse.webhooks.deliveries(hook.webhook_id, { limit: 5 });
    assertEquals(log.deliveries[0].status_code, 200);
    assert((await synapse.webhooks.list()).webhooks.some((w) => w.webhook_id === hook.webhook_id));
    await synapse.webhooks.delete(hook.webhook_id);
    const after = await synapse.memories.changes({ after: before.next_after });
    assert(after.changes.some((c) => c.memory_id === memory.id && c.change === "created"));
  } finally {
    await server.shutdown();
  }
});

Deno.test("errors are SynapseError with the envelope's status, code, message and details", async () => {
  const invalid = await failure(
    synapse.memories.create({ category: "note", key: "Not A Key", content: "x" }),
  );
  assertEquals([invalid.status, invalid.code], [422, "validation_error"]);
  assert(invalid.details.length >= 1 && invalid.details[0].loc.includes("key"), invalid.message);
  assert(invalid.message.length > 0);

  const missing = await failure(synapse.memories.get("00000000-0000-0000-0000-000000000000"));
  assertEquals([missing.status, missing.code], [404, "not_found"]);

  const badToken = await failure(new Synapse({ baseUrl, token: "nope" }).recall("x"));
  assertEquals([badToken.status, badToken.code], [401, "unauthorized"]);
  assertEquals(badToken.toEnvelope().error.code, "unauthorized");

  const userOnly = await failure(agent.keys.list()); // an agent's API key: users only
  assertEquals([userOnly.status, userOnly.code], [403, "forbidden"]);

  const otherUser = await failure(synapse.recall({ query: "x", userId: "somebody-else" }));
  assertEquals(otherUser.code, "forbidden");

  // nothing listens there: no answer at all
  const port = (() => {
    const l = Deno.listen({ port: 0, hostname: "127.0.0.1" });
    const p = (l.addr as Deno.NetAddr).port;
    l.close();
    return p;
  })();
  const down = new Synapse({ baseUrl: `http://127.0.0.1:${port}`, token: "t", retries: 0 });
  const unreachable = await failure(down.health());
  assertEquals([unreachable.status, unreachable.code], [0, "network_error"]);
});

Deno.test("a token can be a function, and jwtSubject reads a JWT's sub", async () => {
  let calls = 0;
  const lazy = new Synapse({ baseUrl, token: () => (calls++, env("SYNAPSE_JWT")) });
  assertEquals((await lazy.identity()).userId, userId);
  assert(calls >= 1);
  assertEquals(jwtSubject(env("SYNAPSE_JWT")), userId);
  assertEquals(jwtSubject("gts_live_abc"), null);
});
