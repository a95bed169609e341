/**
 * make-server-synapse: a Supabase Edge Function that proxies a chat app's memory calls to Synapse.
 *
 *   SYNAPSE_URL=https://<api>.execute-api.<region>.amazonaws.com \
 *     deno run --allow-net --allow-env --allow-read index.ts        # PORT, default 8000
 *   supabase functions serve make-server-synapse                     # or deploy it
 *
 * Routes: POST /make-server-synapse/memory/{ingest,recall,summarize,context},
 * GET /make-server-synapse/memory/identity (see memory.ts and ../../README.md).
 */
import { Hono } from "npm:hono@4.13.19";
import { envelope, optionsFromEnv, synapseMemory } from "./memory.ts";

const app = new Hono();
app.route("/make-server-synapse/memory", synapseMemory(optionsFromEnv()));
app.notFound((c) => c.json(envelope("not_found", "No such route."), 404));
app.onError((error, c) => {
  console.error(`make-server-synapse: ${error?.stack ?? error}`);
  return c.json(envelope("internal_error", "The memory proxy failed."), 500);
});

const port = Number(Deno.env.get("PORT") ?? 8000);
Deno.serve({
  port,
  onListen: ({ hostname, port }) =>
    console.log(`make-server-synapse listening on ${hostname}:${port}`),
}, app.fetch);
