/**
 * The routes as a sub-app that an existing edge function mounts in one line, against the local
 * Synapse; and the helpers, without any server.
 * Env: SYNAPSE_URL, SYNAPSE_JWT, SYNAPSE_USER_ID (set by tests/e2e/test_typescript_clients.py).
 */
import { Hono } from "npm:hono@4.13.19";
import { jwtSubject, optionsFromEnv, synapseMemory, withoutUserId } from "./memory.ts";
import {
  assert,
  assertEquals,
  assertMatch,
  call,
  env,
  eventually,
  freePort,
} from "./test_support.ts";

const token = env("SYNAPSE_JWT");
const userId = env("SYNAPSE_USER_ID");
const synapseUrl = env("SYNAPSE_URL");

/** An app of its own, with its own routes, serving on a free port; the Synapse routes mounted. */
function serve(app: Hono) {
  const port = freePort();
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, app.fetch);
  return { url: `http://127.0.0.1:${port}`, stop: () => server.shutdown() };
}

Deno.test("an existing edge function mounts the routes in one line", async () => {
  const app = new Hono();
  app.get("/make-server-abc123/hello", (c) => c.json({ hello: "world" }));
  app.route("/make-server-abc123/memory", synapseMemory({ url: synapseUrl }));
  const server = serve(app);
  try {
    assertEquals((await call(`${server.url}/make-server-abc123/hello`)).body, { hello: "world" });
    const base = `${server.url}/make-server-abc123/memory`;
    const sessionId = `mount-${crypto.randomUUID().slice(0, 8)}`;
    const ingest = await call(`${base}/ingest`, {
      token,
      body: {
        sessionId,
        messages: [{ role: "user", content: "ผมทำงานที่ธนาคารกสิกรไทย ฝ่าย data platform" }],
      },
    });
    assertEquals(ingest.status, 200, JSON.stringify(ingest.body));
    const recall = await call(`${base}/recall`, { token, body: { query: "ธนาคาร", limit: 2 } });
    assertEquals(recall.status, 200);
    assertMatch(recall.body.memories[0].text, /ธนาคาร/);
    const identity = await call(`${base}/identity`, { token });
    assertEquals(identity.body.userId, userId);
    const health = await call(`${base}/health`);
    assertEquals(health.body, { status: "ok" });
  } finally {
    await server.stop();
  }
});

Deno.test("a pinned mind (SYNAPSE_MIND_ID) is where the proxy's calls act", async () => {
  const mind = await call(`${synapseUrl}/minds`, {
    token,
    body: { name: `edge ${crypto.randomUUID().slice(0, 6)}` },
  });
  assertEquals(mind.status, 201, JSON.stringify(mind.body));
  const app = new Hono();
  app.route("/make-server-x/memory", synapseMemory({ url: synapseUrl, mindId: mind.body.mind_id }));
  const server = serve(app);
  try {
    const base = `${server.url}/make-server-x/memory`;
    const ingest = await call(`${base}/ingest`, {
      token,
      // the caller's own X-Mind-Id is ignored when a mind is pinned
      headers: { "x-mind-id": "default" },
      body: {
        sessionId: "pinned",
        messages: [{ role: "user", content: "The support queue closes at 18:00 Bangkok time" }],
      },
    });
    assertEquals(ingest.status, 200, JSON.stringify(ingest.body));
    assert(ingest.body.nuggets.every((n: { mind_id: string }) => n.mind_id === mind.body.mind_id));
    const inDefault = await call(`${synapseUrl}/memory/recall`, {
      token,
      body: { query: "support queue closes" },
    });
    assert(!inDefault.body.memories.some((m: { text: string }) => /18:00/.test(m.text)));
  } finally {
    await server.stop();
    await call(`${synapseUrl}/minds/${mind.body.mind_id}`, { token, method: "DELETE" });
  }
});

Deno.test("background ingest by default, kept alive through waitUntil", async () => {
  const kept: Promise<unknown>[] = [];
  const failures: { status: number; body: string }[] = [];
  const app = new Hono();
  app.route(
    "/m/memory",
    synapseMemory({
      url: synapseUrl,
      backgroundIngest: true,
      waitUntil: (work) => kept.push(work),
      onBackgroundError: (e) => failures.push(e),
    }),
  );
  const server = serve(app);
  try {
    const accepted = await call(`${server.url}/m/memory/ingest`, {
      token,
      body: {
        sessionId: "bg",
        messages: [{ role: "user", content: "My cat is called Mochi and she is 3 years old" }],
      },
    });
    assertEquals([accepted.status, accepted.body.accepted], [202, true]);
    assertEquals(kept.length, 1);
    await Promise.all(kept);
    assertEquals(failures, []);
    await eventually(async () => {
      const r = await call(`${server.url}/m/memory/recall`, { token, body: { query: "Mochi" } });
      return r.body.memories?.find((m: { text: string }) => /Mochi/.test(m.text));
    });
    // Prefer: wait asks for Synapse's own answer
    const waited = await call(`${server.url}/m/memory/ingest`, {
      token,
      headers: { prefer: "wait" },
      body: { sessionId: "bg", messages: [{ role: "user", content: "ok" }] },
    });
    assertEquals(waited.status, 200);
    // a background ingest that Synapse refuses is reported to onBackgroundError
    const refused = await call(`${server.url}/m/memory/ingest`, {
      token: "bad",
      body: { sessionId: "bg", messages: [{ role: "user", content: "x" }] },
    });
    assertEquals(refused.status, 202);
    await Promise.all(kept);
    assertEquals(failures.map((f) => f.status), [401]);
  } finally {
    await server.stop();
  }
});

Deno.test("in Supabase's runtime, a background ingest is kept alive by EdgeRuntime.waitUntil", async () => {
  const kept: Promise<unknown>[] = [];
  const runtime = globalThis as { EdgeRuntime?: unknown };
  runtime.EdgeRuntime = { waitUntil: (work: Promise<unknown>) => kept.push(work) };
  try {
    const app = new Hono().route("/m/memory", synapseMemory({ url: synapseUrl }));
    const res = await app.request("/m/memory/ingest", {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        prefer: "respond-async",
      },
      body: JSON.stringify({
        sessionId: "edge-runtime",
        messages: [{ role: "user", content: "I ride a blue Vespa to work" }],
      }),
    });
    assertEquals(res.status, 202);
    assertEquals((await res.json()).accepted, true);
    assertEquals(kept.length, 1);
    await Promise.all(kept);
  } finally {
    delete runtime.EdgeRuntime;
  }
});

Deno.test("a gateway's non-envelope error is put in the envelope", async () => {
  const app = new Hono();
  app.route(
    "/m/memory",
    synapseMemory({
      url: "http://synapse.invalid",
      fetch: () =>
        Promise.resolve(
          new Response('{"message":"Internal Server Error"}', {
            status: 502,
            headers: { "content-type": "application/json" },
          }),
        ),
    }),
  );
  const res = await app.request("/m/memory/recall", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: '{"query":"x"}',
  });
  assertEquals(res.status, 502);
  assertEquals(await res.json(), {
    error: { code: "upstream_unavailable", message: "Internal Server Error" },
  });
});

Deno.test("helpers: userId is dropped from a JSON object only; a JWT's sub; env settings", () => {
  assertEquals(JSON.parse(withoutUserId('{"userId":"eve","query":"x"}')), { query: "x" });
  assertEquals(withoutUserId('{"query":"x"}'), '{"query":"x"}');
  assertEquals(withoutUserId("{not json"), "{not json");
  assertEquals(withoutUserId('["userId"]'), '["userId"]');
  assertEquals(jwtSubject(token), userId);
  assertEquals(jwtSubject("gts_live_abc"), null);
  const vars = new Map([
    ["SYNAPSE_URL", "http://x"],
    ["SYNAPSE_MIND_ID", "m_abc"],
    ["SYNAPSE_INGEST_BACKGROUND", "true"],
  ]);
  const options = optionsFromEnv({ get: (n) => vars.get(n) });
  assertEquals([options.url, options.mindId, options.backgroundIngest], [
    "http://x",
    "m_abc",
    true,
  ]);
});
