import type { ErrorDetail } from "./types.ts";

/**
 * Every failure of a call: an answer outside 2xx (the service's error envelope
 * `{"error": {"code", "message", "details"?}}`), or no answer at all.
 *
 * - `status`: the HTTP status; 0 when there was no answer (`code` is then `network_error` or
 *   `timeout`).
 * - `code`: the envelope's code (`unauthorized`, `validation_error`, `not_found`, ...). An answer
 *   that is not in the envelope (a proxy's HTML page) gets a code from its status (`http_502`).
 * - `details`: `[{loc, msg}]` for `validation_error`, else usually empty.
 * - `retryAfter`: seconds from `Retry-After` (429, 503), else null.
 */
export class SynapseError extends Error {
  override readonly name = "SynapseError";
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetail[];
  readonly retryAfter: number | null;
  /** The answer's body as received (parsed JSON, or text), for anything the fields above miss. */
  readonly body: unknown;

  constructor(
    init: {
      status: number;
      code: string;
      message: string;
      details?: ErrorDetail[];
      retryAfter?: number | null;
      body?: unknown;
      cause?: unknown;
    },
  ) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.retryAfter = init.retryAfter ?? null;
    this.body = init.body;
  }

  /** The service's envelope for this error (as the edge proxy answers it). */
  toEnvelope(): { error: { code: string; message: string; details?: ErrorDetail[] } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details.length ? { details: this.details } : {}),
      },
    };
  }
}

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
  503: "upstream_unavailable",
};

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), else null. */
export function parseRetryAfter(value: string | null): number | null {
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** A SynapseError from a non-2xx answer, whatever its body. */
export async function errorFromResponse(response: Response): Promise<SynapseError> {
  const text = await response.text().catch(() => "");
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
  const error = (body as { error?: unknown } | null)?.error;
  if (error && typeof error === "object") {
    const e = error as { code?: unknown; message?: unknown; details?: unknown };
    return new SynapseError({
      status: response.status,
      code: typeof e.code === "string"
        ? e.code
        : CODES[response.status] ?? `http_${response.status}`,
      message: typeof e.message === "string" ? e.message : response.statusText,
      details: Array.isArray(e.details) ? (e.details as ErrorDetail[]) : [],
      retryAfter,
      body,
    });
  }
  // not the envelope, e.g. API Gateway's own {"message": "Unauthorized"}
  const message = (body as { message?: unknown } | null)?.message;
  return new SynapseError({
    status: response.status,
    code: CODES[response.status] ?? `http_${response.status}`,
    message: typeof message === "string"
      ? message
      : `${response.status} ${response.statusText}`.trim(),
    retryAfter,
    body,
  });
}
