/**
 * Verify a Synapse webhook delivery (the Standard Webhooks scheme) with Web Crypto: Deno, Node 20+,
 * browsers, Supabase edge functions.
 *
 * ```ts
 * const payload = await verifyWebhook(secret, await req.text(), req.headers); // or throws
 * ```
 *
 * `secret` is the `whsec_…` value `POST /webhooks` answered once. Pass the body exactly as received.
 * Deliveries may repeat (at least once): drop a `webhook-id` already handled; order by `data.seq`.
 */

/** Seconds a delivery's timestamp may be from now (a replay defence). */
export const WEBHOOK_TOLERANCE_S = 300;

/** The delivery is not signed by this secret (or is too old or new, or lacks its headers). */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

export interface VerifyOptions {
  /** Seconds the timestamp may be from now (default 300). */
  toleranceSeconds?: number;
  /** "Now" in seconds since the epoch (tests). */
  now?: number;
}

function keyBytes(secret: string): Uint8Array<ArrayBuffer> {
  const raw = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  const bin = atob(raw);
  if (!bin.length) throw new Error("the webhook secret is empty");
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function bodyBytes(body: string | Uint8Array): Uint8Array {
  return typeof body === "string" ? new TextEncoder().encode(body) : body;
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`: the `webhook-signature` of a delivery. */
export async function signWebhook(
  secret: string,
  webhookId: string,
  timestamp: number,
  body: string | Uint8Array,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    keyBytes(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const prefix = new TextEncoder().encode(`${webhookId}.${timestamp}.`);
  const data = bodyBytes(body);
  const message = new Uint8Array(prefix.length + data.length);
  message.set(prefix);
  message.set(data, prefix.length);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, message));
  return "v1," + btoa(String.fromCharCode(...mac));
}

function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The delivery's JSON when it is signed by this secret and recent; else WebhookVerificationError. */
export async function verifyWebhook<T = unknown>(
  secret: string,
  body: string | Uint8Array,
  headers: Headers | Record<string, string>,
  options: VerifyOptions = {},
): Promise<T> {
  const get = (name: string): string | null =>
    headers instanceof Headers
      ? headers.get(name)
      : (Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1] ?? null);
  const id = get("webhook-id");
  const stamp = get("webhook-timestamp");
  const signatures = get("webhook-signature");
  if (!id || !stamp || !signatures) {
    throw new WebhookVerificationError(
      "missing webhook-id, webhook-timestamp or webhook-signature",
    );
  }
  const timestamp = Number(stamp);
  if (!Number.isInteger(timestamp)) {
    throw new WebhookVerificationError("webhook-timestamp is not a number");
  }
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? WEBHOOK_TOLERANCE_S)) {
    throw new WebhookVerificationError("webhook-timestamp is too old or too new");
  }
  const expected = await signWebhook(secret, id, timestamp, body);
  if (!signatures.split(" ").some((given) => sameText(expected, given))) {
    throw new WebhookVerificationError("no matching signature");
  }
  return JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(body)) as T;
}
