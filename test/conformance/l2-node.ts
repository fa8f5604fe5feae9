/**
 * The Node side of the cross-language L2 tests (python/tests/test_l2.py): node-redis plus the wire contract of
 * src/schema/l2.ts, against the same redis-server the Python client uses.
 * `tsx test/conformance/l2-node.ts '<json>'` with `{ port, ca, username, password, ops: [...] }`; prints the
 * result of every op as one JSON array. Ops: `get`; `decodeStream` / `decodeFill` (the contract's decoders);
 * `writeThrough` (encode a stream value of a DynamoDB JSON item, or `null` for a removed row, and write it with the
 * ordering script, as the invalidation function does); `bumpEpoch` (the epoch script); `fill` (a reader's fill).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createClient } from 'redis';
import {
  decodeFillValue, decodeStreamValue, encodeFillValue, encodeStreamValue, epochStart, incarnationAt, L2_EPOCH_BUMP_SCRIPT, L2_VALUE_TTL_SECONDS,
  L2_WRITE_THROUGH_SCRIPT,
} from '../../src/schema/l2';
import type { DynamoJsonItem } from '../../src/schema/l2';

interface Op {
  readonly op: 'get' | 'decodeStream' | 'decodeFill' | 'writeThrough' | 'bumpEpoch' | 'fill';
  readonly key: string;
  readonly promptId?: string;
  readonly sortKey?: string;
  readonly item?: DynamoJsonItem | null;
  readonly inc?: string;
  readonly seq?: string;
  readonly fetchedAt?: number;
  readonly ttlSeconds?: number;
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]) as { port: number; ca: string; username: string; password: string; ops: Op[] };
  const client = createClient({
    socket: { host: '127.0.0.1', port: args.port, tls: true, ca: readFileSync(args.ca), reconnectStrategy: false },
    username: args.username,
    password: args.password,
  });
  client.on('error', () => undefined);
  await client.connect();
  const script = async (text: string, keys: string[], argv: string[]) => {
    const options = { keys, arguments: argv };
    try {
      return await client.evalSha(createHash('sha1').update(text).digest('hex'), options);
    } catch (err) {
      if (!String(err).includes('NOSCRIPT')) throw err;
      return client.eval(text, options);
    }
  };
  const results: unknown[] = [];
  try {
    for (const op of args.ops) {
      if (op.op === 'get') {
        results.push(await client.get(op.key));
      } else if (op.op === 'decodeStream') {
        const raw = await client.get(op.key);
        results.push(raw === null ? null : decodeStreamValue(raw, op.promptId!, op.sortKey ?? 'CURRENT') ?? null);
      } else if (op.op === 'decodeFill') {
        const raw = await client.get(op.key);
        results.push(raw === null ? null : decodeFillValue(raw, op.promptId!, op.sortKey ?? 'CURRENT') ?? null);
      } else if (op.op === 'writeThrough') {
        const value = encodeStreamValue({ inc: op.inc!, seq: op.seq!, writtenAt: Date.now(), item: op.item ?? null });
        results.push(await script(L2_WRITE_THROUGH_SCRIPT, [op.key], [op.inc!, op.seq!, value, String(L2_VALUE_TTL_SECONDS)]));
      } else if (op.op === 'bumpEpoch') {
        results.push(await script(L2_EPOCH_BUMP_SCRIPT, [op.key], [op.inc!, incarnationAt(Date.now() + 60_000), epochStart()]));
      } else {
        const value = encodeFillValue({ inc: op.inc ?? null, fetchedAt: op.fetchedAt ?? Date.now(), item: op.item! });
        results.push(await client.set(op.key, value, { EX: op.ttlSeconds ?? 60 }));
      }
    }
  } finally {
    await client.quit().catch(() => undefined);
  }
  process.stdout.write(JSON.stringify(results) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 2;
});
