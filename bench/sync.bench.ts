/**
 * Sync write-avoidance figures: 1000 prompts through the real engine, the real Bedrock SDK client and the
 * Bedrock stand-in, into DynamoDB Local. Counts calls with SDK middleware; durations are indicative only.
 * The "as deployed" runs build the engine the way the sync function does (the table's shared Bedrock budget and
 * per-prompt claims), so their DynamoDB writes include the coordination writes (budget slots, claims).
 *
 *   npx tsx bench/sync.bench.ts
 */
import { DEFAULT_SOURCE_REQUESTS_PER_SECOND } from '../src/schema';
import { SyncEngine, SyncReport } from '../src/sync/engine';
import { BedrockPromptSource } from '../src/sync/sources/bedrock';
import { SyncClaims } from '../src/write/claims';
import { SharedRateLimiter } from '../src/write/shared-budget';
import { seedPublished, textDraft } from '../test/support/bedrock-fixtures';
import { BedrockStandIn } from '../test/support/bedrock-stand-in';
import { CallCounter } from '../test/support/call-counter';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

const PROMPTS = 1000;
const CHANGED = 10;

async function main(): Promise<void> {
  const local = await startDynamoDBLocal();
  const counter = new CallCounter();
  const ddb = counter.attach(localDynamoDBClient({}, local.endpoint));
  const tableName = await createServingTable(ddb, 'bench-sync');
  // The fill runs with the stand-in's quota lifted (1000 first copies at 5 req/s would take ~7 minutes);
  // the no-change and 10-changed syncs run under Bedrock's real 10 req/s quota and the default pace.
  const standIn = new BedrockStandIn({ requestsPerSecond: 100_000 });
  await standIn.start();
  const ids = seedPublished(standIn, PROMPTS);
  const bedrockCalls = new CallCounter();

  const run = async (label: string, pace: number, asDeployed = false): Promise<SyncReport> => {
    counter.reset();
    bedrockCalls.reset();
    standIn.reset();
    // As the handler builds it: every Bedrock call takes its slot from the table's budget; changes are claimed.
    const limiter = asDeployed ? new SharedRateLimiter({ dynamoDBClient: ddb, tableName, ratePerSecond: pace }) : undefined;
    const claims = asDeployed ? new SyncClaims({ dynamoDBClient: ddb, tableName, leaseMs: 5 * 60_000 }) : undefined;
    const source = new BedrockPromptSource({ client: bedrockCalls.attach(standIn.client({ maxAttempts: 1 })), maxRequestsPerSecond: pace, limiter });
    const report = await new SyncEngine({ dynamoDBClient: ddb, tableName, source, claims }).fullSync();
    const stats = standIn.stats();
    console.log([
      label.padEnd(34),
      `written ${String(report.written).padStart(4)}`,
      `unchanged ${String(report.unchanged).padStart(4)}`,
      `DynamoDB writes ${String(counter.writes()).padStart(4)}`,
      `TransactWriteItems ${String(counter.count('TransactWriteItems')).padStart(4)}`,
      `GetPrompt ${String(stats.served.GetPrompt).padStart(4)}`,
      `ListPrompts ${String(stats.served.ListPrompts).padStart(4)}`,
      `writes per Bedrock call ${(counter.writes() / Math.max(1, stats.served.GetPrompt + stats.served.ListPrompts)).toFixed(2)}`,
      `throttled ${stats.throttled.GetPrompt + stats.throttled.ListPrompts}`,
      `${(report.durationMs / 1000).toFixed(1)} s`,
    ].join(' | '));
    return report;
  };

  console.log(`Sync of ${PROMPTS} Bedrock prompts (stand-in) into DynamoDB Local ${local.endpoint}`);
  await run('fill (quota lifted)', 100_000);
  standIn.setRequestsPerSecond(10); // from here on, Bedrock's real quota
  await run(`no change (10 req/s quota, pace ${DEFAULT_SOURCE_REQUESTS_PER_SECOND}/s)`, DEFAULT_SOURCE_REQUESTS_PER_SECOND);
  await run('no change, as deployed', DEFAULT_SOURCE_REQUESTS_PER_SECOND, true);
  const change = (round: number) => {
    for (const id of ids.slice(0, CHANGED)) {
      standIn.updateDraft(id, textDraft(`changed-${id}`, `Changed text ${round} about {{topic}} (${id})`));
      standIn.createVersion(id);
    }
  };
  change(1);
  await run(`${CHANGED} changed (10 req/s quota)`, DEFAULT_SOURCE_REQUESTS_PER_SECOND);
  change(2);
  await run(`${CHANGED} changed, as deployed`, DEFAULT_SOURCE_REQUESTS_PER_SECOND, true);
  console.log(`For scale: copying all ${PROMPTS} prompts with GetPrompt at the full 10 req/s quota takes ${PROMPTS / 10} s of the account's whole budget.`);

  await standIn.stop();
  ddb.destroy();
  await local.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
