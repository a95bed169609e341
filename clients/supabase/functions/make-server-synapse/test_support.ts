/** Shared by the proxy's tests (driven by tests/e2e/test_typescript_clients.py). */
import assert from "node:assert/strict";

export const assertEquals: (actual: unknown, expected: unknown, message?: string) => void =
  assert.deepStrictEqual;
export const assertMatch: (value: string, re: RegExp, message?: string) => void = assert.match;
export { assert };

export function env(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    throw new Error(`${name} is not set (run through tests/e2e/test_typescript_clients.py)`);
  }
  return value;
}

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

export const THAI_AND_ENGLISH = [
  { role: "user", content: "สวัสดีครับ ผมชื่อสมชาย อยู่เชียงใหม่" },
  { role: "assistant", content: "ยินดีที่ได้รู้จักครับคุณสมชาย มีอะไรให้ช่วยไหมครับ" },
  { role: "user", content: "I prefer dark theme in every editor" },
  { role: "user", content: "ขอบคุณ" },
];

/** Poll until `check` returns a value (not undefined), or fail after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not true within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A JSON call: status, headers and parsed body. */
export async function call(
  url: string,
  init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {},
  // deno-lint-ignore no-explicit-any
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: init.body === undefined
      ? undefined
      : typeof init.body === "string"
      ? init.body
      : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // text
  }
  return { status: res.status, headers: res.headers, body };
}
