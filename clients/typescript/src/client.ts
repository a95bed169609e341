import { errorFromResponse, SynapseError } from "./errors.ts";
import type {
  AcceptIn,
  AnswerOf,
  BatchIn,
  BatchOut,
  BodyOf,
  Consolidated,
  ContextIn,
  ExportJob,
  ExportStarted,
  ImportIn,
  ImportOut,
  IngestIn,
  Memory,
  MemoryIn,
  MemoryPatch,
  ProposalAnswer,
  ProposalList,
  QueryOf,
  RecallIn,
} from "./types.ts";

/** A bearer token: a user's JWT or an agent's API key, or a function that returns the current one. */
export type Token = string | (() => string | Promise<string>);

export interface SynapseOptions {
  /** The API's base URL, e.g. `http://127.0.0.1:3000` or the stack's HTTP API URL. */
  baseUrl: string;
  /** A user's JWT (e.g. a Supabase session's access token) or an agent's API key (`gts_live_…`). */
  token?: Token;
  /** The mind every call acts in (sent as `X-Mind-Id`); a call's own `mindId` wins. */
  mindId?: string;
  /** Headers sent on every call. */
  headers?: Record<string, string>;
  /** Per-attempt timeout in milliseconds (default 30000); 0 for none. */
  timeoutMs?: number;
  /**
   * Extra attempts for calls that are safe to repeat (reads, deletes, PUTs, and ingest with its
   * Idempotency-Key) after no answer, 429 or 503 (default 2). Waits Retry-After (at most 10 s).
   */
  retries?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /** The mind this call acts in (`X-Mind-Id`). */
  mindId?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  timeoutMs?: number;
  retries?: number;
}

export interface GetOptions extends CallOptions {
  /** The memory as it was at this moment (RFC 3339), from its history: 404 if it did not exist then. */
  asOf?: string;
}

export interface IngestOptions extends CallOptions {
  /** The same key within an hour is the same ingest (a retry). Default: a new random key per call. */
  idempotencyKey?: string;
}

export interface WaitExportOptions extends CallOptions {
  /**
   * Give up after this many milliseconds (default 1 200 000: 20 minutes; past its writer's 16 the
   * server itself answers `failed`). Then the export goes on: wait for the same id again.
   */
  maxWaitMs?: number;
  /** The longest pause between two looks, in ms (default 5000); they start at 500 ms and double. */
  pollMs?: number;
  /** Called with every answer while waiting (e.g. to show progress). */
  onStatus?: (job: ExportJob) => void;
}

const EXPORT_WAIT_MS = 1_200_000;
const EXPORT_POLL_MS = 5_000;
const FIRST_POLL_MS = 500;

interface Request {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | null | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Whether repeating the request is harmless (then it is retried). */
  retry?: boolean;
  text?: boolean;
}

const MAX_RETRY_WAIT_S = 10;

/** `sub` of a JWT, read without verifying it (Synapse verifies), or null when it is not a JWT. */
export function jwtSubject(token: string): string | null {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    const raw = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
    const bytes = Uint8Array.from(raw, (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes)) as { sub?: unknown };
    return typeof claims.sub === "string" && claims.sub ? claims.sub : null;
  } catch {
    return null;
  }
}

function segment(value: string): string {
  return encodeURIComponent(value);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A client of the Synapse HTTP API (see the service's GET /openapi.json; the types here are
 * generated from it). Every method throws a {@link SynapseError} on failure.
 *
 * ```ts
 * const synapse = new Synapse({ baseUrl: "http://127.0.0.1:3000", token: jwt });
 * await synapse.memories.create({ category: "preference", key: "theme", content: "Dark theme" });
 * const { prompt } = await synapse.context({ query: "what theme?", sessionId: "s1" });
 * ```
 */
export class Synapse {
  readonly baseUrl: string;
  readonly mindId: string | undefined;
  readonly #options: SynapseOptions;
  readonly #fetch: typeof fetch;

  constructor(options: SynapseOptions) {
    if (!options?.baseUrl) throw new TypeError("Synapse: baseUrl is required");
    this.#options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.mindId = options.mindId;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The same client acting in another mind. */
  withMind(mindId: string | undefined): Synapse {
    return new Synapse({ ...this.#options, mindId });
  }

  /** The same client with another token (e.g. a refreshed session). */
  withToken(token: Token): Synapse {
    return new Synapse({ ...this.#options, token });
  }

  // ------------------------------------------------------------------ structured memory

  readonly memories = {
    /**
     * Create, or update by (category, key): the memory as stored, or (an agent's change of a memory
     * a person verified) `{proposal}`, which awaits the person: tell them apart with `isProposal`.
     */
    create: (body: MemoryIn, o?: CallOptions): Promise<Memory | ProposalAnswer> =>
      this.#call<Memory>({ method: "POST", path: "/memory", body }, o),
    /**
     * Up to 100 memories in one call, each answered in `results` (in order) as `create` would answer
     * it alone: `status` 201/200 with `memory`, 409/422 with `error` (the envelope). Safe to repeat:
     * every item writes by (category, key).
     */
    batch: (memories: MemoryIn[], o?: CallOptions): Promise<BatchOut> =>
      this.#call<BatchOut>({
        method: "POST",
        path: "/memory/batch",
        body: { memories } satisfies BatchIn,
        retry: true,
      }, o),
    /**
     * Import 1-500 records: `format: "synapse"` (an export's memory records, with their history) or
     * `"mem0"` (mem0's memory objects). A record already stored as given is skipped.
     */
    import: (body: ImportIn, o?: CallOptions): Promise<ImportOut> =>
      this.#call<ImportOut>({ method: "POST", path: "/memory/import", body, retry: true }, o),
    list: (
      query: QueryOf<"/memory", "get"> = {},
      o?: CallOptions,
    ): Promise<AnswerOf<"/memory", "get">> =>
      this.#call({ method: "GET", path: "/memory", query, retry: true }, o),
    /** Every memory matching the query, page after page (follows `next_cursor`). */
    all: (
      query: Omit<QueryOf<"/memory", "get">, "cursor"> = {},
      o?: CallOptions,
    ): AsyncGenerator<Memory> => this.#pages(query, o),
    /** One memory; with `asOf`, the version it had at that moment. */
    get: (id: string, o?: GetOptions): Promise<Memory> =>
      this.#call({
        method: "GET",
        path: `/memory/${segment(id)}`,
        query: { as_of: o?.asOf } satisfies QueryOf<"/memory/{id}", "get">,
        retry: true,
      }, o),
    /** The memory, or `{proposal}` for an agent's change of a verified memory (see `create`). */
    update: (id: string, patch: MemoryPatch, o?: CallOptions): Promise<Memory | ProposalAnswer> =>
      this.#call({ method: "PUT", path: `/memory/${segment(id)}`, body: patch, retry: true }, o),
    /** Nothing (deleted), or `{proposal}` for an agent's deletion of a verified memory. */
    delete: (id: string, o?: CallOptions): Promise<ProposalAnswer | undefined> =>
      this.#call({ method: "DELETE", path: `/memory/${segment(id)}`, retry: true }, o),
    /** Mark verified (users only: an agent gets 403). */
    verify: (id: string, o?: CallOptions): Promise<Memory> =>
      this.#call({ method: "POST", path: `/memory/${segment(id)}/verify`, retry: true }, o),
    byTag: (
      tag: string,
      query: Omit<QueryOf<"/memory/by-tag", "get">, "tag"> = {},
      o?: CallOptions,
    ): Promise<AnswerOf<"/memory/by-tag", "get">> =>
      this.#call(
        { method: "GET", path: "/memory/by-tag", query: { ...query, tag }, retry: true },
        o,
      ),
    search: (
      q: string,
      query: Omit<QueryOf<"/memory/search", "get">, "q"> = {},
      o?: CallOptions,
    ): Promise<AnswerOf<"/memory/search", "get">> =>
      this.#call({ method: "GET", path: "/memory/search", query: { ...query, q }, retry: true }, o),
    /** Memories expiring within a window (`30m`, `24h`, `7d`; default 7d), soonest first. */
    expiring: (within?: string, o?: CallOptions): Promise<AnswerOf<"/memory/expiring", "get">> =>
      this.#call({ method: "GET", path: "/memory/expiring", query: { within }, retry: true }, o),
    /** The mind's changes after a position (`after`: a seq), oldest first; 410 `gone` past 7 days. */
    changes: (
      query: QueryOf<"/memory/changes", "get"> = {},
      o?: CallOptions,
    ): Promise<AnswerOf<"/memory/changes", "get">> =>
      this.#call({ method: "GET", path: "/memory/changes", query, retry: true }, o),
    /** Every kept version, the current one first. */
    history: (id: string, o?: CallOptions): Promise<AnswerOf<"/memory/{id}/history", "get">> =>
      this.#call({ method: "GET", path: `/memory/${segment(id)}/history`, retry: true }, o),
    /**
     * The memories in time order: live ones whose time (`valid_at`, else `created_at`) is in
     * `[from, to)`, oldest first, one page (`next_cursor`). `from`/`to`: RFC 3339, or `YYYY-MM-DD`
     * (00:00 in the mind's timezone).
     */
    timeline: (
      query: QueryOf<"/memory/timeline", "get"> = {},
      o?: CallOptions,
    ): Promise<AnswerOf<"/memory/timeline", "get">> =>
      this.#call({ method: "GET", path: "/memory/timeline", query, retry: true }, o),
    /** Make an old version current again (as a new version). */
    restore: (id: string, version: number, o?: CallOptions): Promise<Memory | ProposalAnswer> =>
      this.#call({
        method: "POST",
        path: `/memory/${segment(id)}/restore`,
        body: { version } satisfies BodyOf<"/memory/{id}/restore", "post">,
      }, o),
  };

  // ------------------------------------------------------------------ review (users only)

  readonly proposals = {
    /** The mind's pending proposals, newest first. */
    list: (
      query: { limit?: number; cursor?: string } = {},
      o?: CallOptions,
    ): Promise<ProposalList> =>
      this.#call({ method: "GET", path: "/memory/proposals", query, retry: true }, o),
    /**
     * A person's yes, with optional edits: the memory (a new version, `change: accepted`), or
     * undefined for an accepted deletion. 409 `conflict` when the memory changed since.
     */
    accept: (id: string, edits?: AcceptIn, o?: CallOptions): Promise<Memory | undefined> =>
      this.#call({
        method: "POST",
        path: `/memory/proposals/${segment(id)}/accept`,
        body: edits,
      }, o),
    /** A person's no: the proposal is gone, the memory unchanged. */
    decline: (id: string, o?: CallOptions): Promise<void> =>
      this.#call(
        { method: "POST", path: `/memory/proposals/${segment(id)}/decline`, retry: true },
        o,
      ),
  };

  /** Plain-text recall for an LLM's context (GET /memory/recall), critical first. */
  recallText(query: QueryOf<"/memory/recall", "get"> = {}, o?: CallOptions): Promise<string> {
    return this.#call({ method: "GET", path: "/memory/recall", query, retry: true, text: true }, o);
  }

  // ------------------------------------------------------------------ conversational memory

  /**
   * Semantic + full-text recall: a query, or the whole body. A period the query names ("last week",
   * "เมื่อวาน") is read at `reference_time` (default now) in `timezone` (default the mind's); `as_of`
   * recalls the memories as they were then. Each result has `valid_at`.
   */
  recall(query: string | RecallIn, o?: CallOptions): Promise<AnswerOf<"/memory/recall", "post">> {
    const body: RecallIn = typeof query === "string" ? { query } : query;
    return this.#call({ method: "POST", path: "/memory/recall", body, retry: true }, o);
  }

  /**
   * Everything one chat turn needs: identity, memories, summary, recent messages and the prompt (its
   * first line the current time, its memories dated, in the timezone). Time fields as for `recall`.
   */
  context(
    query: string | ContextIn,
    o?: CallOptions,
  ): Promise<AnswerOf<"/memory/context", "post">> {
    const body: ContextIn = typeof query === "string" ? { query } : query;
    return this.#call({ method: "POST", path: "/memory/context", body, retry: true }, o);
  }

  /**
   * Ingest a conversation's messages (with an Idempotency-Key, so a retry is the same ingest). A
   * message's `created_at` is when it was said; its relative dates are read then, in `timezone`.
   */
  ingest(body: IngestIn, o: IngestOptions = {}): Promise<AnswerOf<"/memory/ingest", "post">> {
    const key = o.idempotencyKey ?? crypto.randomUUID();
    return this.#call({
      method: "POST",
      path: "/memory/ingest",
      body,
      headers: { "Idempotency-Key": key },
      retry: true,
    }, o);
  }

  summarize(
    body: BodyOf<"/memory/summarize", "post">,
    o?: CallOptions,
  ): Promise<AnswerOf<"/memory/summarize", "post">> {
    return this.#call({ method: "POST", path: "/memory/summarize", body }, o);
  }

  /** A session's summary chunks, oldest first. */
  summaries(
    sessionId: string,
    o?: CallOptions,
  ): Promise<AnswerOf<"/memory/summaries/{sessionId}", "get">> {
    return this.#call({
      method: "GET",
      path: `/memory/summaries/${segment(sessionId)}`,
      retry: true,
    }, o);
  }

  /**
   * The identity line of a user in the chosen mind. Without `userId`, the `sub` of the client's JWT
   * (an API key must name its owner).
   */
  async identity(
    userId?: string,
    o?: CallOptions,
  ): Promise<AnswerOf<"/memory/identity/{userId}", "get">> {
    const who = userId ?? jwtSubject(await this.#token());
    if (!who) {
      throw new TypeError("Synapse.identity: pass the userId (the token is not a JWT with a sub)");
    }
    return this.#call({ method: "GET", path: `/memory/identity/${segment(who)}`, retry: true }, o);
  }

  // ------------------------------------------------------------------ minds, keys, providers, privacy

  readonly minds = {
    create: (
      body: BodyOf<"/minds", "post">,
      o?: CallOptions,
    ): Promise<AnswerOf<"/minds", "post">> =>
      this.#call({ method: "POST", path: "/minds", body }, o),
    list: (o?: CallOptions): Promise<AnswerOf<"/minds", "get">> =>
      this.#call({ method: "GET", path: "/minds", retry: true }, o),
    /**
     * Change a mind's settings (`"default"` too): any of name, description, timezone (IANA, like
     * `Asia/Bangkok`) and review_agent_changes; only what is sent changes.
     */
    update: (
      mindId: string,
      body: BodyOf<"/minds/{mindId}", "patch">,
      o?: CallOptions,
    ): Promise<AnswerOf<"/minds/{mindId}", "patch">> =>
      this.#call({ method: "PATCH", path: `/minds/${segment(mindId)}`, body, retry: true }, o),
    delete: (mindId: string, o?: CallOptions): Promise<void> =>
      this.#call({ method: "DELETE", path: `/minds/${segment(mindId)}`, retry: true }, o),
    /** Merge duplicates and summarize old low-priority memories (no model call). */
    consolidate: (mindId = "default", o?: CallOptions): Promise<Consolidated> =>
      this.#call({ method: "POST", path: `/minds/${segment(mindId)}/consolidate` }, o),
  };

  readonly keys = {
    /** A new API key; its plain `key` is shown this once. */
    create: (body: BodyOf<"/keys", "post">, o?: CallOptions): Promise<AnswerOf<"/keys", "post">> =>
      this.#call({ method: "POST", path: "/keys", body }, o),
    list: (o?: CallOptions): Promise<AnswerOf<"/keys", "get">> =>
      this.#call({ method: "GET", path: "/keys", retry: true }, o),
    delete: (keyId: string, o?: CallOptions): Promise<void> =>
      this.#call({ method: "DELETE", path: `/keys/${segment(keyId)}`, retry: true }, o),
  };

  readonly providers = {
    /** Store the user's own provider API key (KMS-encrypted); only `gemini` is accepted. */
    put: (
      provider: string,
      apiKey: string,
      o?: CallOptions,
    ): Promise<AnswerOf<"/providers/{provider}", "put">> =>
      this.#call({
        method: "PUT",
        path: `/providers/${segment(provider)}`,
        body: { api_key: apiKey } satisfies BodyOf<"/providers/{provider}", "put">,
        retry: true,
      }, o),
    list: (o?: CallOptions): Promise<AnswerOf<"/providers", "get">> =>
      this.#call({ method: "GET", path: "/providers", retry: true }, o),
    delete: (provider: string, o?: CallOptions): Promise<void> =>
      this.#call({ method: "DELETE", path: `/providers/${segment(provider)}`, retry: true }, o),
  };

  /** Webhooks (users only): signed deliveries of every change; verify them with `verifyWebhook`. */
  readonly webhooks = {
    /** Register a URL (https, public); the answer's `secret` is shown this once. */
    create: (
      body: BodyOf<"/webhooks", "post">,
      o?: CallOptions,
    ): Promise<AnswerOf<"/webhooks", "post">> =>
      this.#call({ method: "POST", path: "/webhooks", body }, o),
    list: (o?: CallOptions): Promise<AnswerOf<"/webhooks", "get">> =>
      this.#call({ method: "GET", path: "/webhooks", retry: true }, o),
    delete: (webhookId: string, o?: CallOptions): Promise<void> =>
      this.#call({ method: "DELETE", path: `/webhooks/${segment(webhookId)}`, retry: true }, o),
    /** Queue a signed `webhook.test` delivery. */
    test: (webhookId: string, o?: CallOptions): Promise<unknown> =>
      this.#call({ method: "POST", path: `/webhooks/${segment(webhookId)}/test` }, o),
    /** The latest delivery attempts, newest first. */
    deliveries: (
      webhookId: string,
      query: QueryOf<"/webhooks/{webhookId}/deliveries", "get"> = {},
      o?: CallOptions,
    ): Promise<AnswerOf<"/webhooks/{webhookId}/deliveries", "get">> =>
      this.#call({
        method: "GET",
        path: `/webhooks/${segment(webhookId)}/deliveries`,
        query,
        retry: true,
      }, o),
  };

  /**
   * Everything stored for the user, every mind, in one answer (GET /me/export): small accounts; past
   * what one answer carries it is 413 `payload_too_large`: use `createExport`.
   */
  export(o?: CallOptions): Promise<AnswerOf<"/me/export", "get">> {
    return this.#call({ method: "GET", path: "/me/export", retry: true }, o);
  }

  // ------------------------------------------------------------------ exports of any size (users only)

  /**
   * Ask for an export (POST /me/exports): the server writes everything of the user to a JSON Lines
   * file in the background; `export_id` is what `getExport` / `waitExport` take. Asked again while
   * one is being written, the answer is that export (so a retry is harmless).
   */
  createExport(o?: CallOptions): Promise<ExportStarted> {
    return this.#call({ method: "POST", path: "/me/exports", retry: true }, o);
  }

  /**
   * An export's state (GET /me/exports/{exportId}): `pending`, `ready` (with `url`, good for an hour
   * from this answer, `bytes`, `records`, `expires_at`) or `failed`. 404 `not_found` past 24 hours.
   */
  getExport(exportId: string, o?: CallOptions): Promise<ExportJob> {
    return this.#call({ method: "GET", path: `/me/exports/${segment(exportId)}`, retry: true }, o);
  }

  /**
   * `getExport` until the export is ready: the ready job. Throws a `SynapseError` with code
   * `export_failed` when the server could not write it (ask again), or `export_timeout` after
   * `maxWaitMs` (both with status 0: no error answer, the export's state).
   */
  async waitExport(exportId: string, o: WaitExportOptions = {}): Promise<ExportJob> {
    const maxWaitMs = o.maxWaitMs ?? EXPORT_WAIT_MS;
    const pollMs = o.pollMs ?? EXPORT_POLL_MS;
    if (!(maxWaitMs >= 0) || !(pollMs > 0)) {
      throw new RangeError("Synapse.waitExport: maxWaitMs must be >= 0 and pollMs > 0");
    }
    const deadline = Date.now() + maxWaitMs;
    let wait = Math.min(FIRST_POLL_MS, pollMs);
    for (;;) {
      const job = await this.getExport(exportId, o);
      o.onStatus?.(job);
      if (job.status === "ready") return job;
      if (job.status === "failed") {
        throw new SynapseError({
          status: 0,
          code: "export_failed",
          message: "The server could not write the export; ask for a new one (createExport).",
        });
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new SynapseError({
          status: 0,
          code: "export_timeout",
          message: `The export is still ${job.status} after ${maxWaitMs} ms; wait for it again.`,
        });
      }
      await sleep(Math.min(wait, left), o.signal);
      wait = Math.min(wait * 2, pollMs);
    }
  }

  /**
   * The export file (a ready job, or its `url`) as a streamed `Response` (`.body`, `.text()`, …).
   * The URL is presigned storage: the request carries no token and none of the client's headers.
   * An error answer throws a `SynapseError` with code `download_failed` and the storage's status
   * (403 once the URL is past its hour: `getExport` gives a new one; 404 once the file is gone).
   */
  async downloadExport(
    source: ExportJob | string,
    o: { signal?: AbortSignal } = {},
  ): Promise<Response> {
    const url = typeof source === "string" ? source : source.status === "ready" ? source.url : null;
    if (!url || !/^https?:\/\//.test(url)) {
      throw new TypeError("Synapse.downloadExport: a ready export (waitExport) or its http(s) url");
    }
    let response: Response;
    try {
      // only the URL: never this client's token, X-Mind-Id or headers
      response = await this.#fetch(url, { method: "GET", signal: o.signal });
    } catch (cause) {
      if (o.signal?.aborted) throw cause;
      // the runtime's message quotes the URL, whose query is its signature: only the host is named
      throw new SynapseError({
        status: 0,
        code: "network_error",
        message: `The export's download from ${new URL(url).host} failed.`,
      });
    }
    if (!response.ok) {
      await response.body?.cancel();
      const hint = response.status === 403
        ? " Its URL is good for an hour: getExport gives a new one."
        : response.status === 404
        ? " The file is gone (a day after the export was asked for, or after DELETE /me)."
        : "";
      throw new SynapseError({
        status: response.status,
        code: "download_failed",
        message: `The export's download answered HTTP ${response.status}.${hint}`,
      });
    }
    return response;
  }

  /** Delete everything stored for the user (DELETE /me). */
  deleteMe(o?: CallOptions): Promise<AnswerOf<"/me", "delete">> {
    return this.#call({ method: "DELETE", path: "/me", retry: true }, o);
  }

  health(o?: CallOptions): Promise<AnswerOf<"/health", "get">> {
    return this.#call({ method: "GET", path: "/health", retry: true }, o);
  }

  /** The service's OpenAPI document. */
  openapi(o?: CallOptions): Promise<Record<string, unknown>> {
    return this.#call({ method: "GET", path: "/openapi.json", retry: true }, o);
  }

  // ------------------------------------------------------------------ transport

  async *#pages(
    query: Omit<QueryOf<"/memory", "get">, "cursor">,
    o?: CallOptions,
  ): AsyncGenerator<Memory> {
    let cursor: string | null | undefined = undefined;
    do {
      const page: AnswerOf<"/memory", "get"> = await this.memories.list({ ...query, cursor }, o);
      yield* page.memories;
      cursor = page.next_cursor;
    } while (cursor);
  }

  async #token(): Promise<string> {
    const token = this.#options.token;
    return typeof token === "function" ? await token() : token ?? "";
  }

  async #call<T>(req: Request, o: CallOptions = {}): Promise<T> {
    const url = new URL(this.baseUrl + req.path);
    for (const [name, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const retries = req.retry ? (o.retries ?? this.#options.retries ?? 2) : 0;
    const timeoutMs = o.timeoutMs ?? this.#options.timeoutMs ?? 30_000;
    for (let attempt = 0;; attempt++) {
      const headers = new Headers(this.#options.headers);
      headers.set("accept", req.text ? "text/plain" : "application/json");
      const token = await this.#token();
      if (token) headers.set("authorization", `Bearer ${token}`);
      const mindId = o.mindId ?? this.mindId;
      if (mindId) headers.set("x-mind-id", mindId);
      if (req.body !== undefined) headers.set("content-type", "application/json");
      for (const [name, value] of Object.entries({ ...req.headers, ...o.headers })) {
        headers.set(name, value);
      }
      const signals = [o.signal, timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined]
        .filter((s): s is AbortSignal => s !== undefined);
      let response: Response;
      try {
        response = await this.#fetch(url, {
          method: req.method,
          headers,
          body: req.body === undefined ? undefined : JSON.stringify(req.body),
          signal: signals.length ? AbortSignal.any(signals) : undefined,
        });
      } catch (cause) {
        if (o.signal?.aborted) throw cause; // the caller's own abort
        const timedOut = (cause as Error)?.name === "TimeoutError";
        const error = new SynapseError({
          status: 0,
          code: timedOut ? "timeout" : "network_error",
          message: timedOut
            ? `Synapse did not answer ${req.method} ${req.path} within ${timeoutMs} ms.`
            : `Synapse could not be reached (${req.method} ${req.path}): ${String(cause)}`,
          cause,
        });
        if (attempt < retries) {
          await sleep(200 * 2 ** attempt, o.signal);
          continue;
        }
        throw error;
      }
      if (response.ok) {
        if (response.status === 204) {
          await response.body?.cancel();
          return undefined as T;
        }
        return (req.text ? await response.text() : await response.json()) as T;
      }
      const error = await errorFromResponse(response);
      if (attempt < retries && (response.status === 429 || response.status === 503)) {
        const wait = Math.min(error.retryAfter ?? 0.2 * 2 ** attempt, MAX_RETRY_WAIT_S);
        await sleep(wait * 1000, o.signal);
        continue;
      }
      throw error;
    }
  }
}
