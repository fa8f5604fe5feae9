/**
 * The Node side of the cross-language L2 tests (python/tests/test_l2.py): node-redis plus the wire contract of
 * src/schema/l2.ts, against the same redis-server the Python client uses.
 * `tsx test/conformance/l2-node.ts '<json>'` with `{ port, ca, username, password, ops: [...] }`; prints the
 * result of every op as one JSON array. Ops: `get`, `decode` (decodeL2Value), `fill` (encode a DynamoDB JSON
 * item and write it through the ordering script), `incr`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createClient } from 'redis';
import { decodeL2Value, encodeL2Value, itemRevision, L2_PUT_IF_NEWER_SCRIPT, L2_VALUE_TTL_SECONDS } from '../../src/schema/l2';
import type { DynamoJsonItem } from '../../src/schema/l2';

interface Op {
  readonly op: 'get' | 'decode' | 'fill' | 'incr';
  readonly key: string;
  readonly promptId?: string;
  readonly item?: DynamoJsonItem;
  readonly fetchedAt?: number;
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
  const sha = createHash('sha1').update(L2_PUT_IF_NEWER_SCRIPT).digest('hex');
  const results: unknown[] = [];
  try {
    for (const op of args.ops) {
      if (op.op === 'get') {
        results.push(await client.get(op.key));
      } else if (op.op === 'decode') {
        const raw = await client.get(op.key);
        results.push(raw === null ? null : decodeL2Value(raw, op.promptId!) ?? null);
      } else if (op.op === 'fill') {
        const revision = itemRevision(op.item!);
        const value = encodeL2Value({ revision, fetchedAt: op.fetchedAt ?? Date.now(), item: op.item! });
        const options = { keys: [op.key], arguments: [String(revision), value, String(L2_VALUE_TTL_SECONDS)] };
        let written: unknown;
        try {
          written = await client.evalSha(sha, options);
        } catch (err) {
          if (!String(err).includes('NOSCRIPT')) throw err;
          written = await client.eval(L2_PUT_IF_NEWER_SCRIPT, options);
        }
        results.push(written);
      } else {
        results.push(await client.incr(op.key));
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
