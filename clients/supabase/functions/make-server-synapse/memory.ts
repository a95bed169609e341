/**
 * Synapse's memory routes as a Hono sub-app, for a Supabase Edge Function (or any Deno/Hono server):
 *
 * ```ts
 * import { synapseMemory } from "./memory.ts";
 * app.route("/make-server-<id>/memory", synapseMemory({ url: Deno.env.get("SYNAPSE_URL")! }));
 * ```
 *
 * | route (under the mount point)  | forwards to Synapse           |
 * |--------------------------------|-------------------------------|
 * | `POST /ingest`                 | `POST /memory/ingest` (or in the background: 202) |
 * | `POST /recall`                 | `POST /memory/recall`         |
 * | `POST /summarize`              | `POST /memory/summarize`      |
 * | `POST /context`                | `POST /memory/context`        |
 * | `GET /identity`                | `GET /memory/identity/<sub of the JWT>` |
 * | `GET /health`                  | `GET /health`                 |
 *
 * The caller's `Authorization: Bearer <Supabase JWT>` is forwarded as is and Synapse verifies it; the
 * user is the token's `sub` and nothing else: a `userId` in a JSON body is removed before forwarding.
 * Synapse's answers pass through with their status and body (errors in its envelope
 * `{"error": {"code", "message", "details"?}}`); when Synapse cannot be reached the answer is 503
 * `upstream_unavailable` with `Retry-After`.
 *
 * Self-contained on purpose (only Hono, through an `npm:` specifier): a Supabase function bundles
 * what is under `supabase/functions/`, so this file can be copied next to an existing function.
 */
import { Hono } from "npm:hono@4.13.19";
import type { Context } from "npm:hono@4.13.19";
import { cors } from "npm:hono@4.13.19/cors";

export interface SynapseMemoryOptions {
  /** Synapse's base URL, e.g. the stack's HTTP API URL (`SYNAPSE_URL`). */
  url: string;
  /**
   * The mind every call acts in, sent as `X-Mind-Id` (`SYNAPSE_MIND_ID`). When set, a caller's own
   * `X-Mind-Id` is ignored; when unset, the caller's is forwarded (without one: the default mind).
   */
  mindId?: string;
  /**
   * Ingest in the background by default (`SYNAPSE_INGEST_BACKGROUND=true`): answer 202
   * `{"accepted": true}` at once and forward after. Default false: wait for Synapse and pass its
   * answer through. Either way a request can choose with `Prefer: respond-async` (background) or
   * `Prefer: wait` (wait), or `?background=true|false`.
   */
  backgroundIngest?: boolean;
  /** Milliseconds to wait for Synapse before answering 503 (default 30000). */
  timeoutMs?: number;
  /** `Retry-After` (seconds) of the 503 sent when Synapse cannot be reached (default 5). */
  retryAfterSeconds?: number;
  /**
   * CORS for the chat app's browser calls: allowed origins (default `*`), or false when the host app
   * does its own CORS.
   */
  cors?: false | { origin: string | string[] };
  /** Keeps a background ingest alive after the answer; default `EdgeRuntime.waitUntil` if present. */
  waitUntil?: (work: Promise<unknown>) => void;
  /** Called when a background ingest fails (default: console.error). */
  onBackgroundError?: (error: { status: number; body: string }) => void;
  /** The fetch used to call Synapse (default: the global one). */
  fetch?: typeof fetch;
}

/** The options from the environment: SYNAPSE_URL, SYNAPSE_MIND_ID, SYNAPSE_INGEST_BACKGROUND,
 * SYNAPSE_TIMEOUT_MS, SYNAPSE_CORS_ORIGINS (comma-separated). */
export function optionsFromEnv(
  env: { get(name: string): string | undefined } = Deno.env,
): SynapseMemoryOptions {
  const url = env.get("SYNAPSE_URL");
  if (!url) throw new Error("SYNAPSE_URL is not set: the URL of the Synapse API");
  const origins = env.get("SYNAPSE_CORS_ORIGINS")?.split(",").map((o) => o.trim()).filter(Boolean);
  const timeout = Number(env.get("SYNAPSE_TIMEOUT_MS"));
  return {
    url,
    mindId: env.get("SYNAPSE_MIND_ID") || undefined,
    backgroundIngest: /^(1|true|yes|on)$/i.test(env.get("SYNAPSE_INGEST_BACKGROUND") ?? ""),
    timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : undefined,
    cors: origins?.length ? { origin: origins } : undefined,
  };
}

type Envelope = { error: { code: string; message: string; details?: unknown[] } };

const CODES: Record<number, string> = {
  400: "invalid_json",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "payload_too_large",
  422: "validation_error",
  429: "rate_limited",
  500: "internal_error",
  502: "upstream_unavailable",
  503: "upstream_unavailable",
  504: "upstream_unavailable",
};

/** Bodies past this are refused here (413); Synapse's own limit is 256 KiB. */
const MAX_BODY = 1024 * 1024;
const PASSED_HEADERS = ["content-type", "retry-after", "x-request-id", "apigw-requestid"];

export function envelope(code: string, message: string): Envelope {
  return { error: { code, message } };
}

function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}) {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** `sub` of a JWT, read without verifying it (Synapse verifies the token), else null. */
export function jwtSubject(token: string): string | null {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    const raw = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
    const claims = JSON.parse(
      new TextDecoder().decode(Uint8Array.from(raw, (c) => c.charCodeAt(0))),
    ) as { sub?: unknown };
    return typeof claims.sub === "string" && claims.sub ? claims.sub : null;
  } catch {
    return null;
  }
}

function bearer(c: Context): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
  return match ? match[1] : null;
}

/** The body without a top-level `userId` (the user is the token's); anything else as it came. */
export function withoutUserId(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text; // not JSON: Synapse answers 400 invalid_json
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return text;
  if (!Object.hasOwn(parsed, "userId")) return text;
  const { userId: _ignored, ...rest } = parsed as Record<string, unknown>;
  return JSON.stringify(rest);
}

function globalWaitUntil(): ((work: Promise<unknown>) => void) | undefined {
  const runtime = (globalThis as { EdgeRuntime?: { waitUntil?: (p: Promise<unknown>) => void } })
    .EdgeRuntime;
  return typeof runtime?.waitUntil === "function" ? runtime.waitUntil.bind(runtime) : undefined;
}

/** The sub-app of Synapse's memory routes; mount it with `app.route(prefix, synapseMemory(...))`. */
export function synapseMemory(options: SynapseMemoryOptions): Hono {
  if (!options?.url) throw new Error("synapseMemory: options.url (Synapse's URL) is required");
  const base = options.url.replace(/\/+$/, "");
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retryAfter = String(options.retryAfterSeconds ?? 5);
  const app = new Hono();

  if (options.cors !== false) {
    app.use(
      "*",
      cors({
        origin: options.cors?.origin ?? "*",
        allowMethods: ["GET", "POST", "OPTIONS"],
        allowHeaders: [
          "authorization",
          "content-type",
          "x-mind-id",
          "idempotency-key",
          "prefer",
          "x-client-info",
          "apikey",
        ],
        exposeHeaders: ["retry-after", "preference-applied"],
        maxAge: 600,
      }),
    );
  }

  /** One call to Synapse; its answer as it came, in the envelope when it is an error. */
  async function forward(
    c: Context,
    method: "GET" | "POST",
    path: string,
    body?: string,
    extra: Record<string, string> = {},
  ): Promise<Response> {
    const headers = new Headers({ accept: "application/json", ...extra });
    const auth = c.req.header("authorization");
    if (auth) headers.set("authorization", auth);
    const mind = options.mindId ?? c.req.header("x-mind-id");
    if (mind) headers.set("x-mind-id", mind);
    if (body !== undefined) headers.set("content-type", "application/json");
    const key = c.req.header("idempotency-key");
    if (key && !headers.has("idempotency-key")) headers.set("idempotency-key", key);
    let upstream: Response;
    try {
      upstream = await doFetch(`${base}${path}`, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const timedOut = (error as Error)?.name === "TimeoutError";
      console.error(`synapse: ${method} ${path}: ${String(error)}`);
      return jsonResponse(
        503,
        envelope(
          "upstream_unavailable",
          timedOut
            ? `Synapse did not answer within ${timeoutMs} ms; try again shortly.`
            : "Synapse cannot be reached right now; try again shortly.",
        ),
        { "retry-after": retryAfter },
      );
    }
    const out = new Headers();
    for (const name of PASSED_HEADERS) {
      const value = upstream.headers.get(name);
      if (value) out.set(name, value);
    }
    if (upstream.ok || upstream.status < 400) {
      return new Response(upstream.status === 204 ? null : upstream.body, {
        status: upstream.status,
        headers: out,
      });
    }
    // an error: Synapse's envelope as it is; anything else (a gateway's page) put in the envelope
    const text = await upstream.text();
    try {
      const parsed = JSON.parse(text) as Partial<Envelope>;
      if (typeof parsed?.error?.code === "string") {
        return new Response(text, { status: upstream.status, headers: out });
      }
    } catch {
      // not JSON
    }
    out.set("content-type", "application/json; charset=utf-8");
    const message = (() => {
      try {
        const m = (JSON.parse(text) as { message?: unknown }).message;
        return typeof m === "string" && m ? m : null;
      } catch {
        return null;
      }
    })();
    return new Response(
      JSON.stringify(
        envelope(
          CODES[upstream.status] ?? `http_${upstream.status}`,
          message ?? `Synapse answered ${upstream.status} ${upstream.statusText}`.trim() + ".",
        ),
      ),
      { status: upstream.status, headers: out },
    );
  }

  function unauthorized(): Response {
    return jsonResponse(
      401,
      envelope("unauthorized", "Send the user's JWT as Authorization: Bearer <token>."),
    );
  }

  async function readBody(c: Context): Promise<string | Response> {
    const declared = Number(c.req.header("content-length") ?? 0);
    if (declared > MAX_BODY) {
      return jsonResponse(413, envelope("payload_too_large", "The request body is too large."));
    }
    const text = await c.req.text();
    if (text.length > MAX_BODY) {
      return jsonResponse(413, envelope("payload_too_large", "The request body is too large."));
    }
    return withoutUserId(text);
  }

  function post(route: string, upstreamPath: string) {
    app.post(route, async (c) => {
      if (!bearer(c)) return unauthorized();
      const body = await readBody(c);
      if (body instanceof Response) return body;
      return forward(c, "POST", upstreamPath, body);
    });
  }

  post("/recall", "/memory/recall");
  post("/context", "/memory/context");
  post("/summarize", "/memory/summarize");

  app.post("/ingest", async (c) => {
    if (!bearer(c)) return unauthorized();
    const body = await readBody(c);
    if (body instanceof Response) return body;
    if (!wantsBackground(c, options.backgroundIngest ?? false)) {
      return forward(c, "POST", "/memory/ingest", body);
    }
    // the same Idempotency-Key on a retry of this request makes it the same ingest
    const key = c.req.header("idempotency-key") ?? crypto.randomUUID();
    const work = forward(c, "POST", "/memory/ingest", body, { "idempotency-key": key }).then(
      async (res) => {
        if (!res.ok) {
          const failure = { status: res.status, body: await res.text() };
          (options.onBackgroundError ??
            ((e) => console.error(`synapse: background ingest failed: ${e.status} ${e.body}`)))(
              failure,
            );
        } else {
          await res.body?.cancel();
        }
      },
      (error) => console.error(`synapse: background ingest failed: ${String(error)}`),
    );
    (options.waitUntil ?? globalWaitUntil())?.(work);
    return jsonResponse(202, { accepted: true, idempotencyKey: key }, {
      "preference-applied": "respond-async",
    });
  });

  app.get("/identity", (c) => {
    const token = bearer(c);
    if (!token) return unauthorized();
    const sub = jwtSubject(token);
    if (!sub) {
      return jsonResponse(
        401,
        envelope("unauthorized", "The bearer token is not a JWT with a sub (a user's token)."),
      );
    }
    return forward(c, "GET", `/memory/identity/${encodeURIComponent(sub)}`);
  });

  app.get("/health", (c) => forward(c, "GET", "/health"));

  return app;
}

function wantsBackground(c: Context, byDefault: boolean): boolean {
  const query = c.req.query("background");
  if (query !== undefined) return /^(1|true|yes|on)?$/i.test(query);
  const prefer = (c.req.header("prefer") ?? "").toLowerCase();
  if (/\brespond-async\b/.test(prefer)) return true;
  if (/\bwait\b/.test(prefer)) return false;
  return byDefault;
}
