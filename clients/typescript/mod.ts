/**
 * The TypeScript client of Synapse, long-term memory for LLM agents: no dependencies beyond
 * `fetch`; Deno, Node (a TypeScript-aware runtime, or the bundle `deno task bundle` makes) and
 * browsers. Its types are generated from the service's OpenAPI document (src/schema.d.ts).
 *
 * @module
 */
export { jwtSubject, Synapse } from "./src/client.ts";
export type {
  CallOptions,
  GetOptions,
  IngestOptions,
  SynapseOptions,
  Token,
  WaitExportOptions,
} from "./src/client.ts";
export { parseRetryAfter, SynapseError } from "./src/errors.ts";
export { isProposal } from "./src/types.ts";
export {
  signWebhook,
  verifyWebhook,
  WEBHOOK_TOLERANCE_S,
  WebhookVerificationError,
} from "./src/webhooks.ts";
export type { VerifyOptions } from "./src/webhooks.ts";
export type * from "./src/types.ts";
