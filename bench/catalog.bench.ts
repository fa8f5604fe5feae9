/**
 * Catalog cost per membership change: items DynamoDB reads to keep `#catalog` right when new prompts arrive.
 * 600 prompts with 3 versions each (2,401 items with the catalog), then 30 new prompts synced one by one as
 * 30 CloudTrail events would be, then 30 arriving at once (concurrent syncs), then one deletion. "Items read"
 * is what DynamoDB examined: ScannedCount of Scans and Queries, plus every item GetItem/BatchGetItem returned.
 *
 *   npx tsx bench/catalog.bench.ts
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SyncEngine } from '../src/sync/engine';
import { startDynamoDBLocal } from '../test/support/dynamodb-local';
import { MemorySource, textPrompt } from '../test/support/memory-source';
import { createServingTable, localDynamoDBClient } from '../test/support/table';

const PROMPTS = 600;
const VERSIONS = 3;
const NEW = 30;

/** Counts items DynamoDB examined, by command, from the responses themselves. */
function countItemsRead(client: DynamoDBClient): { read: Record<string, number>; reset(): void; total(): number } {
  const read: Record<string, number> = {};
  client.middlewareStack.add((next: any, context: any) => async (args: any) => {
    const result: any = await next(args);
    const out = result.output ?? {};
    const name = String(context.commandName).replace(/Command$/, '');
    let items = 0;
    if (typeof out.ScannedCount === 'number') items = out.ScannedCount;
    else if (out.Item) items = 1;
    else if (out.Responses) items = Object.values(out.Responses as Record<string, unknown[]>).reduce((n, r) => n + r.length, 0);
    read[name] = (read[name] ?? 0) + items;
    return result;
  }, { step: 'initialize', name: 'countItemsRead' });
  return {
    read,
    reset: () => { for (const k of Object.keys(read)) delete read[k]; },
    total: () => Object.values(read).reduce((a, b) => a + b, 0),
  };
}

async function main(): Promise<void> {
  const local = await startDynamoDBLocal();
  const ddb = localDynamoDBClient({}, local.endpoint);
  const counter = countItemsRead(ddb);
  const tableName = await createServingTable(ddb, 'bench-catalog');
  const source = new MemorySource();
  const engine = () => new SyncEngine({ dynamoDBClient: ddb, tableName, source });
  for (let v = 1; v <= VERSIONS; v++) {
    for (let i = 0; i < PROMPTS; i++) source.set(`prompt-${i}`, textPrompt(`prompt ${i} v${v}`));
    await engine().fullSync();
  }
  const line = (label: string, changes: number) => console.log(
    `${label.padEnd(44)} items read ${String(counter.total()).padStart(7)}  per change ${(counter.total() / changes).toFixed(1).padStart(7)}  `
    + JSON.stringify(counter.read));

  counter.reset();
  for (let i = 0; i < NEW; i++) {
    source.set(`new-${i}`, textPrompt(`new ${i}`));
    await engine().syncPrompt(`new-${i}`);
  }
  line(`${NEW} new prompts, one event each, in turn`, NEW);

  counter.reset();
  for (let i = 0; i < NEW; i++) source.set(`burst-${i}`, textPrompt(`burst ${i}`));
  await Promise.all(Array.from({ length: NEW }, (_, i) => engine().syncPrompt(`burst-${i}`)));
  line(`${NEW} new prompts, one event each, at once`, NEW);

  counter.reset();
  source.delete('prompt-0');
  await engine().syncPrompt('prompt-0');
  line('1 deletion (rebuilds from a scan)', 1);

  ddb.destroy();
  await local.stop();
}

void main();
