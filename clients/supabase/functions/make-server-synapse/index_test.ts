/**
 * The standalone function as it is started: `deno run --allow-net --allow-env --allow-read index.ts`
 * with SYNAPSE_URL (the local server) and PORT, and a whole chat turn through it with a user's JWT.
 * Env: SYNAPSE_URL, SYNAPSE_JWT, SYNAPSE_USER_ID (set by tests/e2e/test_typescript_clients.py).
 */
import {
  assert,
  assertEquals,
  assertMatch,
  call,
  env,
  eventually,
  freePort,
  THAI_AND_ENGLISH,
} from "./test_support.ts";

const here = new URL(".", import.meta.url).pathname;

/** index.ts in a process of its own; its URL, and stop(). */
async function startProxy(vars: Record<string, string>) {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-env", "--allow-read", "index.ts"],
    cwd: here,
    env: { ...vars, PORT: String(port), NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  const url = `http://127.0.0.1:${port}/make-server-synapse/memory`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    return (await output).join("\n");
  };
  try {
    await eventually(async () => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/`);
        await res.body?.cancel();
        return true; // it answers (404 at /)
      } catch {
        return undefined;
      }
    }, 30_000);
  } catch (error) {
    throw new Error(`the proxy did not start: ${error}\n${await stop()}`);
  }
  return { url, stop };
}

const token = env("SYNAPSE_JWT");
const userId = env("SYNAPSE_USER_ID");

Deno.test("a whole chat turn through the standalone function", async () => {
  const proxy = await startProxy({ SYNAPSE_URL: env("SYNAPSE_URL") });
  try {
    const sessionId = `edge-${crypto.randomUUID().slice(0, 8)}`;

    // the turn starts with the context for the user's message: nothing known yet
    const before = await call(`${proxy.url}/context`, {
      token,
      body: { query: "where do I live?", sessionId },
    });
    assertEquals(before.status, 200, JSON.stringify(before.body));
    assertEquals(before.body.memories, []);
    assertEquals(before.body.recent, []);

    // then, after the LLM's answer, the turn is ingested (Thai and English); a body userId is
    // dropped by the proxy, so it cannot name another user
    const ingest = await call(`${proxy.url}/ingest`, {
      token,
      body: { userId: "somebody-else", sessionId, messages: THAI_AND_ENGLISH },
      headers: { "idempotency-key": `${sessionId}-1` },
    });
    assertEquals(ingest.status, 200, JSON.stringify(ingest.body));
    assert(ingest.body.nuggets_created >= 2, JSON.stringify(ingest.body));
    for (const nugget of ingest.body.nuggets) assertEquals(nugget.user_id, userId);

    // the next turn recalls the new memories, and the context has identity and recent messages
    const recall = await call(`${proxy.url}/recall`, {
      token,
      body: { query: "เชียงใหม่", limit: 3 },
    });
    assertEquals(recall.status, 200, JSON.stringify(recall.body));
    assertMatch(recall.body.memories[0].text, /เชียงใหม่/);
    const theme = await call(`${proxy.url}/recall`, {
      token,
      body: { query: "which editor theme?", limit: 1 },
    });
    assertMatch(theme.body.memories[0].text, /dark theme/);
    const after = await call(`${proxy.url}/context`, {
      token,
      body: { query: "where do I live?", sessionId },
    });
    assertEquals(after.status, 200);
    assertMatch(after.body.identity, /สมชาย/);
    assertEquals(after.body.recent.length, THAI_AND_ENGLISH.length);
    assertMatch(after.body.prompt, /Identity:[\s\S]*Recent messages:/);

    const identity = await call(`${proxy.url}/identity`, { token });
    assertEquals(identity.status, 200);
    assertEquals(identity.body.userId, userId);
    assertMatch(identity.body.identity, /เชียงใหม่/);

    const summary = await call(`${proxy.url}/summarize`, { token, body: { sessionId } });
    assertEquals(summary.status, 200, JSON.stringify(summary.body));
    assertEquals(summary.body.chunk_id, `sum:${sessionId}:chunk_1`);
  } finally {
    await proxy.stop();
  }
});

Deno.test("a background ingest answers 202 at once and lands", async () => {
  const proxy = await startProxy({ SYNAPSE_URL: env("SYNAPSE_URL") });
  try {
    const sessionId = `edge-bg-${crypto.randomUUID().slice(0, 8)}`;
    const accepted = await call(`${proxy.url}/ingest`, {
      token,
      headers: { prefer: "respond-async" },
      body: {
        sessionId,
        messages: [{
          role: "user",
          content: "We deploy the payments service with Nomad on Fridays",
        }],
      },
    });
    assertEquals(accepted.status, 202);
    assertEquals(accepted.body.accepted, true);
    assertEquals(accepted.headers.get("preference-applied"), "respond-async");
    const found = await eventually(async () => {
      const r = await call(`${proxy.url}/recall`, { token, body: { query: "Nomad payments" } });
      return r.body.memories?.find((m: { text: string }) => /Nomad/.test(m.text));
    });
    assertMatch(found.text, /payments/);
  } finally {
    await proxy.stop();
  }
});

Deno.test("Synapse's errors pass through in the envelope", async () => {
  const proxy = await startProxy({ SYNAPSE_URL: env("SYNAPSE_URL") });
  try {
    const badToken = await call(`${proxy.url}/recall`, {
      token: "not-a-token",
      body: { query: "x" },
    });
    assertEquals(badToken.status, 401);
    assertEquals(badToken.body.error.code, "unauthorized");
    assert(typeof badToken.body.error.message === "string");

    const forged = await call(`${proxy.url}/identity`, {
      token: token.split(".").slice(0, 2).join(".") + ".forged-signature",
    });
    assertEquals([forged.status, forged.body.error.code], [401, "unauthorized"]);

    const none = await call(`${proxy.url}/context`, { body: { query: "x" } });
    assertEquals([none.status, none.body.error.code], [401, "unauthorized"]);

    const invalid = await call(`${proxy.url}/recall`, { token, body: { query: "x", limit: 500 } });
    assertEquals([invalid.status, invalid.body.error.code], [422, "validation_error"]);
    assert(invalid.body.error.details.length >= 1);

    const notJson = await call(`${proxy.url}/ingest`, { token, body: "{not json" });
    assertEquals([notJson.status, notJson.body.error.code], [400, "invalid_json"]);

    const unknownMind = await call(`${proxy.url}/recall`, {
      token,
      body: { query: "x" },
      headers: { "x-mind-id": "m_doesnotexist" },
    });
    assertEquals([unknownMind.status, unknownMind.body.error.code], [404, "not_found"]);

    const route = await call(`${proxy.url}/nothing-here`, { token });
    assertEquals([route.status, route.body.error.code], [404, "not_found"]);
  } finally {
    await proxy.stop();
  }
});

Deno.test("the chat app's browser calls get CORS headers", async () => {
  const proxy = await startProxy({ SYNAPSE_URL: env("SYNAPSE_URL") });
  try {
    const preflight = await fetch(`${proxy.url}/context`, {
      method: "OPTIONS",
      headers: {
        origin: "https://chat.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-mind-id",
      },
    });
    await preflight.body?.cancel();
    assert(preflight.status === 204 || preflight.status === 200, String(preflight.status));
    assertEquals(preflight.headers.get("access-control-allow-origin"), "*");
    assertMatch(preflight.headers.get("access-control-allow-headers") ?? "", /x-mind-id/);
    const answer = await call(`${proxy.url}/recall`, {
      token,
      body: { query: "x" },
      headers: { origin: "https://chat.example" },
    });
    assertEquals(answer.headers.get("access-control-allow-origin"), "*");
  } finally {
    await proxy.stop();
  }
});

Deno.test("Synapse unreachable: 503 upstream_unavailable in the envelope, with Retry-After", async () => {
  const proxy = await startProxy({ SYNAPSE_URL: `http://127.0.0.1:${freePort()}` });
  try {
    for (
      const [route, body] of [["recall", { query: "x" }], ["ingest", {
        sessionId: "s",
        messages: [],
      }]]
    ) {
      const down = await call(`${proxy.url}/${route}`, { token, body });
      assertEquals(down.status, 503, JSON.stringify(down.body));
      assertEquals(down.body.error.code, "upstream_unavailable");
      assert(Number(down.headers.get("retry-after")) > 0);
    }
    const identity = await call(`${proxy.url}/identity`, { token });
    assertEquals([identity.status, identity.body.error.code], [503, "upstream_unavailable"]);
  } finally {
    await proxy.stop();
  }
});

Deno.test("without SYNAPSE_URL the function refuses to start", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-env", "--allow-read", "index.ts"],
    cwd: here,
    env: { PORT: String(freePort()), NO_COLOR: "1", DENO_DIR: Deno.env.get("DENO_DIR") ?? "" },
    clearEnv: true,
  }).output();
  assert(!out.success);
  assertMatch(new TextDecoder().decode(out.stderr), /SYNAPSE_URL is not set/);
});
