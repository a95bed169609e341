/**
 * Friendly names for the generated OpenAPI types (src/schema.d.ts, made by openapi-typescript from
 * the service's GET /openapi.json; regenerate with `make ts-types`), and helpers that read a route's
 * body, query and answer types out of the generated `paths`.
 */
import type { components, operations, paths } from "./schema.d.ts";

export type { components, operations, paths };

type Schemas = components["schemas"];

export type Memory = Schemas["Memory"];
export type MemoryIn = Schemas["MemoryIn"];
export type MemoryPatch = Schemas["MemoryPatch"];
export type BatchIn = Schemas["BatchIn"];
export type BatchOut = Schemas["BatchOut"];
export type BatchItem = Schemas["BatchItem"];
export type ImportIn = Schemas["ImportIn"];
export type ImportOut = Schemas["ImportOut"];
export type MemoryList = Schemas["MemoryList"];
export type MemoryVersion = Schemas["MemoryVersion"];
export type MemoryHistory = Schemas["MemoryHistory"];
export type ScoredMemory = Schemas["ScoredMemory"];
export type Category = Schemas["Category"];
export type Priority = Schemas["Priority"];
export type Source = Schemas["Source"];
export type RecallIn = Schemas["RecallIn"];
export type RecallOut = Schemas["RecallOut"];
export type RecalledMemory = Schemas["RecalledMemory"];
export type ContextIn = Schemas["ContextIn"];
export type ContextOut = Schemas["ContextOut"];
export type ChatMessage = Schemas["ChatMessage"];
export type Role = Schemas["Role"];
export type IngestIn = Schemas["IngestIn"];
export type IngestOut = Schemas["IngestOut"];
export type SummarizeIn = Schemas["SummarizeIn"];
export type SummaryOut = Schemas["SummaryOut"];
export type SummaryChunk = Schemas["SummaryChunk"];
export type SummaryList = Schemas["SummaryList"];
export type IdentityOut = Schemas["IdentityOut"];
export type MindIn = Schemas["MindIn"];
export type MindInfo = Schemas["MindInfo"];
export type MindList = Schemas["MindList"];
export type KeyIn = Schemas["KeyIn"];
export type Scope = Schemas["Scope"];
export type ApiKeyCreated = Schemas["ApiKeyCreated"];
export type ApiKeyList = Schemas["ApiKeyList"];
export type ProviderInfo = Schemas["ProviderInfo"];
export type ProviderList = Schemas["ProviderList"];
export type ExportOut = Schemas["ExportOut"];
// exports of any size (POST /me/exports, GET /me/exports/{exportId})
export type ExportStarted = Schemas["ExportStarted"];
export type ExportJob = Schemas["ExportJob"];
export type ExportStatus = Schemas["ExportStatus"];
export type Deleted = Schemas["Deleted"];
export type Health = Schemas["Health"];
export type MemoryChanges = Schemas["MemoryChanges"];
export type MemoryChange = Schemas["MemoryChange"];
export type WebhookIn = Schemas["WebhookIn"];
export type WebhookCreated = Schemas["WebhookCreated"];
export type WebhookInfo = Schemas["WebhookInfo"];
export type WebhookList = Schemas["WebhookList"];
export type DeliveryAttempt = Schemas["DeliveryAttempt"];
export type DeliveryList = Schemas["DeliveryList"];
export type ErrorEnvelope = Schemas["ErrorEnvelope"];
export type ErrorDetail = Schemas["ErrorDetail"];
// Review (third release)
export type Proposal = Schemas["Proposal"];
export type Proposed = Schemas["Proposed"];
export type ProposalAnswer = Schemas["ProposalAnswer"];
export type ProposalList = Schemas["ProposalList"];
export type AcceptIn = Schemas["AcceptIn"];
export type Consolidated = Schemas["Consolidated"];

/** Mind settings (PATCH /minds/{mindId}): name, description, timezone, review_agent_changes. */
export type MindSettings = BodyOf<"/minds/{mindId}", "patch">;

/** Whether a write's answer is a proposal (202: an agent's change of a verified memory awaits a person). */
export function isProposal(answer: unknown): answer is ProposalAnswer {
  return typeof answer === "object" && answer !== null && "proposal" in answer;
}

/** A path of the API and one of its methods. */
export type Path = keyof paths;
export type Method<P extends Path> = {
  [M in keyof paths[P]]: paths[P][M] extends { responses: unknown } ? M : never;
}[keyof paths[P]];
type Operation<P extends Path, M extends Method<P>> = paths[P][M];

/** The JSON body of a route (`never` when it takes none). */
export type BodyOf<P extends Path, M extends Method<P>> = Operation<P, M> extends
  { requestBody?: { content: { "application/json": infer B } } } ? B : never;

/** The query parameters of a route. */
export type QueryOf<P extends Path, M extends Method<P>> = Operation<P, M> extends
  { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The answer of a route: its 200, else its 201, else its 202, JSON (or text/plain) body. */
export type AnswerOf<P extends Path, M extends Method<P>> = Operation<P, M> extends
  { responses: infer R } ? R extends { 200: { content: infer C } } ? ContentOf<C>
  : R extends { 201: { content: infer C } } ? ContentOf<C>
  : R extends { 202: { content: infer C } } ? ContentOf<C>
  : undefined
  : never;
type ContentOf<C> = C extends { "application/json": infer J } ? J
  : C extends { "text/plain": infer T } ? T
  : unknown;
