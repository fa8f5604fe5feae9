/**
 * One Node.js reader process of the governed rollout fleet test (test/governance/fleet-rollout.test.ts): a
 * PromptClient at its default settings (epoch read every 500 ms) over the built-in Valkey adapter (IAM auth as the
 * reader user, TLS, cluster mode) and its own DynamoDB client. It polls one label for a fixed set of stickiness keys
 * every POLL_MS and writes ONE JSON line per poll to stdout: `{"t": epoch ms, "v": "<version served per key>", "a":
 * "<arm per key: A, B, or - without a rollout>", "e": [rolloutFaults, storeErrors, l2Errors]}` (versions are single
 * digits in the test). Bundled by esbuild and
 * run with plain `node`; it stops when stdin closes, or after MAX_LIFETIME_MS. No jest globals.
 *
 * Environment: TABLE_NAME, DYNAMODB_ENDPOINT, CACHE_PORT, CACHE_CA (PEM), CACHE_USER, PROMPT_ID, LABEL, KEYS (a
 * JSON list), POLL_MS, MAX_LIFETIME_MS.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { cacheTier, labels, preload, PromptClient } from '../../src/runtime';
import { ValkeyL2 } from '../../src/runtime/valkey';

const env = process.env;
const keys = JSON.parse(env.KEYS!) as string[];
const pollMs = Number(env.POLL_MS ?? 50);
const deadline = Date.now() + Number(env.MAX_LIFETIME_MS ?? 180_000);
const dynamoDBClient = new DynamoDBClient({ endpoint: env.DYNAMODB_ENDPOINT, region: 'us-east-1', maxAttempts: 1 });
const l2 = new ValkeyL2({
  host: 'localhost',
  port: Number(env.CACHE_PORT),
  tls: true,
  ca: env.CACHE_CA,
  cluster: true,
  iam: {
    cacheName: 'prompts-cache',
    userId: env.CACHE_USER!,
    serverless: true,
    region: async () => 'us-east-1',
    credentials: async () => ({ accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret', sessionToken: 'local-session' }),
  },
  connectTimeoutMs: 2000,
  onError: (err) => process.stderr.write(`L2 error: ${String((err as Error)?.message ?? err)}\n`),
});
const prompts = new PromptClient({ tableName: env.TABLE_NAME!, dynamoDBClient, l2: cacheTier(l2), features: [labels] });
let stopping = false;
process.stdin.on('end', () => { stopping = true; });
process.stdin.on('close', () => { stopping = true; });
process.stdin.resume();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  // A preload that fails (a start storm on a busy machine) is not fatal: the polls read through as any cold reader does.
  await preload(prompts, [env.PROMPT_ID!], { labels: [env.LABEL!] }).catch((err) => process.stderr.write(`preload failed: ${String((err as Error)?.message ?? err)}\n`));
  while (!stopping && Date.now() < deadline) {
    let versions = '';
    let arms = '';
    for (const key of keys) {
      try {
        const prompt = await prompts.getPrompt(env.PROMPT_ID!, { label: env.LABEL!, stickinessKey: key });
        versions += String(prompt.version);
        arms += prompt.rollout?.arm ?? '-';
      } catch (err) {
        versions += 'x';
        arms += 'x';
        process.stderr.write(`read failed: ${String((err as Error)?.message ?? err)}\n`);
      }
    }
    const stats = prompts.stats();
    process.stdout.write(`${JSON.stringify({ t: Date.now(), v: versions, a: arms, e: [stats.rolloutFaults, stats.storeErrors, stats.l2Errors] })}\n`);
    await sleep(pollMs);
  }
  process.stdout.write(`${JSON.stringify({ stats: prompts.stats() })}\n`);
  await prompts.close();
  await l2.close();
  dynamoDBClient.destroy();
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`reader failed: ${String((err as Error)?.stack ?? err)}\n`);
  process.exit(1);
});
