/**
 * verifyWebhook against signatures the Standard Webhooks reference library (Python) made: the
 * vectors file tests/unit/test_sdk_webhooks.py writes (WEBHOOK_VECTORS).
 */
import assert from "node:assert/strict";
import { signWebhook, verifyWebhook, WebhookVerificationError } from "./mod.ts";

interface Vector {
  secret: string;
  id: string;
  timestamp: number;
  body: string;
  signature: string;
}

const path = Deno.env.get("WEBHOOK_VECTORS");
if (!path) {
  throw new Error("WEBHOOK_VECTORS is not set (run through tests/unit/test_sdk_webhooks.py)");
}
const vectors: Vector[] = JSON.parse(await Deno.readTextFile(path));

Deno.test("the reference library's signatures verify, and the same are made", async () => {
  for (const v of vectors) {
    const headers = {
      "Webhook-Id": v.id,
      "webhook-timestamp": String(v.timestamp),
      "webhook-signature": v.signature,
    };
    assert.deepStrictEqual(
      await verifyWebhook(v.secret, v.body, headers, { now: v.timestamp }),
      JSON.parse(v.body),
    );
    assert.deepStrictEqual(
      await verifyWebhook(v.secret, new TextEncoder().encode(v.body), new Headers(headers), {
        now: v.timestamp + 10,
      }),
      JSON.parse(v.body),
    );
    assert.equal(await signWebhook(v.secret, v.id, v.timestamp, v.body), v.signature);
  }
});

Deno.test("a changed body, another id, an old timestamp or no signature is refused", async () => {
  const v = vectors[0];
  const headers = {
    "webhook-id": v.id,
    "webhook-timestamp": String(v.timestamp),
    "webhook-signature": v.signature,
  };
  const cases: [string, Record<string, string>, number][] = [
    [v.body.replace("1", "2"), headers, v.timestamp],
    [v.body, { ...headers, "webhook-id": "msg_other" }, v.timestamp],
    [v.body, headers, v.timestamp + 301],
    [v.body, { "webhook-id": v.id, "webhook-timestamp": String(v.timestamp) }, v.timestamp],
  ];
  for (const [body, h, now] of cases) {
    await assert.rejects(verifyWebhook(v.secret, body, h, { now }), WebhookVerificationError);
  }
});
