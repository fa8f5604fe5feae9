/**
 * One reader process of the labels fleet test (./labels-cache.test.ts) and bench (bench/labels.bench.ts): a
 * PromptClient over the built-in Valkey adapter (IAM auth as the reader user, TLS, cluster mode) and its own
 * DynamoDB client, bundled by esbuild and run by test/support/lambda-runner.ts. It remembers the arm it last served
 * each key, so it can say whether any key ever went from arm B back to arm A. No jest globals.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { cacheTier, labels, preload, PromptClient } from '../../src/runtime';
import { ValkeyL2 } from '../../src/runtime/valkey';

const env = process.env;
const dynamoDBClient = new DynamoDBClient({ endpoint: env.DYNAMODB_ENDPOINT, region: 'us-east-1', maxAttempts: 1 });
const l2 = new ValkeyL2({
  host: 'localhost',
  port: Number(env.CACHE_PORT),
  tls: true,
  ca: env.CACHE_CA,
  cluster: true,
  iam: {
    cacheName: 'prompts-cache',
    userId: 'prompt-reader',
    serverless: true,
    region: async () => 'us-east-1',
    credentials: async () => ({ accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret', sessionToken: 'local-session' }),
  },
  connectTimeoutMs: 2000,
  onError: (err) => process.stderr.write(`L2 error: ${String((err as Error)?.message ?? err)}\n`),
});
const prompts = new PromptClient({
  tableName: env.TABLE_NAME!, dynamoDBClient, l2: cacheTier(l2), epochPollIntervalMs: Number(env.EPOCH_POLL_MS ?? 500), features: [labels],
});
/** The arm last served to each key ('A' without a rollout). */
const lastArm = new Map<string, 'A' | 'B'>();
let flips = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readAll(id: string, label: string, keys: readonly string[]): Promise<{ arms: ('A' | 'B')[]; versions: number[] }> {
  const arms: ('A' | 'B')[] = [];
  const versions: number[] = [];
  for (const key of keys) {
    const prompt = await prompts.getPrompt(id, { label, stickinessKey: key });
    const arm = prompt.rollout?.arm ?? 'A';
    if (lastArm.get(key) === 'B' && arm === 'A') flips++;
    lastArm.set(key, arm);
    arms.push(arm);
    versions.push(prompt.version);
  }
  return { arms, versions };
}

interface Event {
  readonly op: 'start' | 'until' | 'watch' | 'stats';
  readonly id: string;
  readonly label: string;
  readonly keys: readonly string[];
  /** `until`: the arm each key must be served. */
  readonly expect?: readonly ('A' | 'B')[];
  readonly timeoutMs?: number;
  /** `watch`: the version to wait for (of `label`, or of CURRENT when `label` is empty). */
  readonly version?: number;
}

export const handler = async (event: Event) => {
  if (event.op === 'start') {
    await preload(prompts, [event.id], { labels: [event.label] });
    return { ...(await readAll(event.id, event.label, event.keys)), stats: prompts.stats() };
  }
  if (event.op === 'until') {
    // Reads every key until each is served the expected arm (or the time is up): when did that happen, and did any
    // key go from B back to A meanwhile (counted since the reader started; an abort resets it).
    const started = Date.now();
    const until = started + (event.timeoutMs ?? 10_000);
    let last: ('A' | 'B')[] = [];
    while (Date.now() < until) {
      last = (await readAll(event.id, event.label, event.keys)).arms;
      if (last.every((arm, i) => arm === event.expect![i])) return { at: Date.now(), flips, stats: prompts.stats() };
      await sleep(20);
    }
    return { at: null, flips, arms: last, stats: prompts.stats() };
  }
  if (event.op === 'watch') {
    // Reads until the version is served (every 2 ms, as a busy function would): when (epoch ms), or null.
    const until = Date.now() + (event.timeoutMs ?? 10_000);
    const options = event.label ? { label: event.label } : undefined;
    while (Date.now() < until) {
      const prompt = await prompts.getPrompt(event.id, options).catch(() => undefined);
      if (prompt?.version === event.version) return { at: Date.now() };
      await sleep(2);
    }
    return { at: null };
  }
  if (event.op === 'stats') {
    const result = { flips, stats: prompts.stats() };
    flips = 0;
    return result;
  }
  throw new Error(`unknown op ${String(event.op)}`);
};
