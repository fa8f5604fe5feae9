/**
 * The sceptic's alternative, on a fleet cold start: "why not just cache GetPrompt in memory?"
 *
 * N containers start at once (a deploy, a scale-out, a Region failover), each needing k prompts before it can
 * serve. Side by side, against the SIMULATED Bedrock (a local stand-in enforcing 10 GetPrompt/s, the real
 * quota) and the real DynamoDB Local:
 *
 * - in-process cache: each container keeps a Map of GetPrompt answers (one request per prompt per container,
 *   concurrent requests for the same prompt shared); the first read of every prompt in every container goes to
 *   Bedrock, with the SDK's standard retries (3 attempts, backoff);
 * - table + client: each container has its own `PromptClient` reading the serving table (its first read fetches
 *   the catalog and that prompt in one BatchGetItem, then one GetItem per further prompt); Bedrock is read only by
 *   the sync, paced at half the quota.
 */
import { GetPromptCommand, GetPromptCommandOutput } from '@aws-sdk/client-bedrock-agent';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PromptClient } from '../src/runtime';
import { SyncEngine } from '../src/sync/engine';
import { BedrockPromptSource } from '../src/sync/sources/bedrock';
import { seedPublished } from '../test/support/bedrock-fixtures';
import { BedrockStandIn } from '../test/support/bedrock-stand-in';
import type { CallCounter } from '../test/support/call-counter';
import { createServingTable } from '../test/support/table';

/** Containers starting at once, and prompts each needs. */
export const FLEET_CONTAINERS = 50;
export const PROMPTS_PER_CONTAINER = 4;

/** What one fleet cold start came to. */
export interface FleetFigures {
  /** Containers that had every prompt. */
  readonly ready: number;
  /** Containers that failed to load at least one prompt (their first requests fail). */
  readonly failed: number;
  /** Seconds from the start until the last container was ready or had failed. */
  readonly seconds: number;
}

/** One container with the in-process cache in front of GetPrompt. */
class InProcessCache {
  private readonly entries = new Map<string, Promise<GetPromptCommandOutput>>();

  constructor(private readonly fetch: (id: string) => Promise<GetPromptCommandOutput>) {}

  get(id: string): Promise<GetPromptCommandOutput> {
    let entry = this.entries.get(id);
    if (!entry) {
      entry = this.fetch(id);
      this.entries.set(id, entry);
      entry.catch(() => this.entries.delete(id)); // a failure is not cached: the next request retries
    }
    return entry;
  }
}

/** An indented explanation under a printed figure. */
export function explain(text: string): void {
  console.log(`   ↳ ${text}`);
}

/** Starts `containers` containers at once; each is ready when `load` resolves. */
async function coldStart(containers: number, load: (container: number) => Promise<void>): Promise<FleetFigures> {
  const t0 = performance.now();
  const outcomes = await Promise.allSettled(Array.from({ length: containers }, (_, c) => load(c)));
  const failures = outcomes.flatMap((o) => (o.status === 'rejected' ? [`${(o.reason as Error)?.name}: ${(o.reason as Error)?.message}`] : []));
  const failed = failures.length;
  for (const reason of new Set(failures)) console.log(`   ! ${failures.filter((f) => f === reason).length} container(s) failed: ${reason}`);
  return { ready: containers - failed, failed, seconds: (performance.now() - t0) / 1000 };
}

/** Part of `npm run demo`: prints the fleet cold start both ways and explains each number. */
export async function fleetColdStart(ddb: DynamoDBClient, counter: CallCounter, newContainerClient: () => DynamoDBClient): Promise<void> {
  const n = FLEET_CONTAINERS;
  const k = PROMPTS_PER_CONTAINER;
  console.log(`\n== 4. Fleet cold start: ${n} containers start at once, each needs ${k} prompts (Bedrock SIMULATED: 10 GetPrompt/s)`);
  const standIn = new BedrockStandIn({ requestsPerSecond: 10, latencyMs: 20 });
  await standIn.start();
  try {
    const ids = seedPublished(standIn, k, 'fleet');
    const bedrock = standIn.client(); // standard retry mode: 3 attempts with backoff, as a Lambda function would have

    standIn.reset();
    const cached = await coldStart(n, async () => {
      const cache = new InProcessCache((id) => bedrock.send(new GetPromptCommand({ promptIdentifier: id, promptVersion: '1' })));
      // Wait for every prompt (retries included) so no request is still running when the figures are read.
      const results = await Promise.allSettled(ids.map((id) => cache.get(id)));
      const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (rejected) throw rejected.reason;
    });
    const bedrockStats = standIn.stats();
    console.log(`in-process cache: ${cached.ready} of ${n} containers ready, ${cached.failed} failed, last one after ${cached.seconds.toFixed(1)} s; `
      + `GetPrompt admitted ${bedrockStats.served.GetPrompt}, throttled ${bedrockStats.throttled.GetPrompt}`);
    explain(`${n} × ${k} = ${n * k} first reads, each a GetPrompt: an in-process cache only helps a container after its own`
      + ' first read of each prompt. "Admitted" counts requests inside the 10/s quota; "throttled" counts 429 answers,'
      + ' retries included; a container "failed" when one of its prompts was still throttled after 3 attempts, so its'
      + ' first requests fail and every retry competes for the same 10/s with the rest of the account.');

    const tableName = await createServingTable(ddb, 'demo-fleet');
    standIn.reset();
    const sync = await new SyncEngine({
      dynamoDBClient: ddb, tableName, source: new BedrockPromptSource({ client: standIn.client({ maxAttempts: 1 }) }),
    }).fullSync();
    const syncCalls = standIn.stats().served.GetPrompt;
    counter.reset();
    const containerClients: DynamoDBClient[] = [];
    const served = await coldStart(n, async () => {
      // Each container has its own SDK client (its own connections) and its own PromptClient, as in Lambda.
      const dynamoDBClient = counter.attach(newContainerClient());
      containerClients.push(dynamoDBClient);
      const client = new PromptClient({ tableName, dynamoDBClient });
      await Promise.all(ids.map((id) => client.getPrompt(id)));
    });
    containerClients.forEach((c) => c.destroy());
    console.log(`table + client:   ${served.ready} of ${n} containers ready, ${served.failed} failed, last one after ${served.seconds.toFixed(2)} s; `
      + `GetPrompt 0 (the sync made ${syncCalls}, once, before the fleet started: ${sync.written} prompts); `
      + `DynamoDB BatchGetItem ${counter.count('BatchGetItem')}, GetItem ${counter.count('GetItem')}`);
    explain(`${counter.count('BatchGetItem')} BatchGetItem + ${counter.count('GetItem')} GetItem = ${n} containers × (1 BatchGetItem of the`
      + ` catalog and the first prompt, together + ${k - 1} GetItem for the other prompts): every container misses its empty cache`
      + ' once per prompt, and each miss is one read of the table, which scales with traffic instead of the'
      + ' account\'s 10 requests/s. The sync\'s GetPrompt calls happen once per changed prompt, not per container.');
  } finally {
    await standIn.stop();
  }
}
