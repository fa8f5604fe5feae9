/**
 * `cacheTier(store)`: the cache tier over a store, for the `l2` option. A reader that passes no `l2` bundles none of
 * this; the environment's cache (the construct's cache tier) is loaded from the reader layer with the same code
 * (cache-layer.ts). What it adds to the core: the L2 in front of the table (tiers.ts), the epoch watch (epoch.ts,
 * cache-setup.ts) and the re-validation of the copies in memory when the epoch moves.
 */
import { Readable } from 'node:stream';
import { watchEpoch } from './cache-setup';
import type { Catalog } from './catalog';
import type { EpochWatcher } from './epoch';
import { PromptCacheL2, withTimeout } from './l2';
import type { ReadPath } from './read-path';
import { AttachedTier, PromptCacheTier, TIER_PROTOCOL, TierDeps } from './tier';
import { CacheFirstReader } from './tiers';
import { CURRENT, PARTITION_KEY, SORT_KEY } from '../schema/keys';
import { compareTokens } from '../schema/l2';

/**
 * The cache tier over `store` (Valkey/Redis or your own `PromptCacheL2`): pass it as the client's `l2`.
 *
 * @example
 * import { cacheTier, PromptClient } from 'cdk-prompt-serving/runtime';
 * const prompts = new PromptClient({ l2: cacheTier(myStore) });
 */
export function cacheTier(store: PromptCacheL2): PromptCacheTier {
  return { store, protocol: TIER_PROTOCOL, attach: (deps) => attachTier(store, deps, false) };
}

/** The tier over `store` for one client (`owned`: the client closes the store in `close()`). */
export function attachTier(store: PromptCacheL2, deps: TierDeps, owned: boolean): AttachedTier {
  const { options, counters, table } = deps;
  let epoch: EpochWatcher | undefined;
  const reader = new CacheFirstReader(table, counters, {
    l2: store,
    ...options,
    incarnation: () => epoch?.incarnation,
    epochReady: () => epoch?.ready() ?? Promise.resolve(),
  });
  return {
    reader,
    l2: store,
    owned,
    start(path, catalog, onChecked) {
      if (store.writeThrough === true) {
        epoch = watchEpoch(store, options, () => revalidate(path, catalog, reader, deps), onChecked);
        epoch.start();
      }
      // A reader the L2 serves makes its first table read when the cache fails: warm the SDK before that, once the
      // L2's first connection is settled (not during it, which would slow this reader's start).
      const ready = store.ready;
      if (ready !== undefined) {
        void withTimeout(() => ready.call(store), options.l2ConnectTimeoutMs).catch(() => undefined)
          .then(() => warmTableReads(deps)).catch(() => undefined);
      }
      return epoch;
    },
  };
}

/**
 * The epoch moved: every copy that can change (not exact versions) is compared with the L2's stream value (one GET
 * each, no table read): replaced by a different one (the stream's is the newest applied), kept fresh by the same one,
 * and otherwise marked for re-validation — never dropped, so it stays the last good copy for stale-if-error until a
 * newer one is in hand. Not-found answers are forgotten and the catalog is re-read (from the L2).
 */
async function revalidate(path: ReadPath, catalog: Catalog, reader: CacheFirstReader, deps: TierDeps): Promise<void> {
  const { counters, options } = deps;
  path.generation++;
  path.notFound.clear();
  const checks = [...path.prompts.values()].filter((e) => !e.immutable).map(async (entry) => {
    const shared = await reader.readShared(entry.target.promptId, entry.target.sortKey, false, true);
    if (path.prompts.get(entry.key) !== entry) return; // replaced meanwhile
    if (shared?.token === undefined) {
      entry.invalidated = true;
    } else if (entry.token !== undefined && compareTokens(shared.token, entry.token) === 0) {
      entry.expiresAt = Math.max(entry.expiresAt, Date.now() + options.maxAgeMs);
      entry.invalidated = false;
    } else {
      counters.revalidations++;
      try {
        path.accept(entry.target, shared);
      } catch (err) {
        // A value that breaks the contract (by `name`, not `instanceof`: a tier from the reader layer has its own classes).
        if ((err as Error)?.name !== 'PromptNotFoundError') entry.invalidated = true;
      }
    }
  });
  await Promise.all([...checks, catalog.refresh(undefined, true)]);
  counters.epochMoves++; // counted once every copy was re-validated
}

/**
 * The id the warm-up's requests name (never sent: a reserved id, which no prompt has). SDK middleware on a cache
 * reader's client sees one `GetItem` and one `BatchGetItem` of it at start-up, answered inside the process.
 */
export const WARM_UP_PROMPT_ID = '#warm-up';
const WARM_UP_KEY = { [PARTITION_KEY]: { S: WARM_UP_PROMPT_ID }, [SORT_KEY]: { S: CURRENT } };
/** A pointer-shaped item in DynamoDB's JSON, so the warm-up deserializes the attribute types a read does. */
const WARM_UP_ITEM = {
  ...WARM_UP_KEY, v: { N: '2' }, on: { BOOL: true }, tags: { L: [{ S: 'a' }] }, vars: { M: { x: { S: 'y' } } }, none: { NULL: true },
};

/**
 * Runs the table's request path once per operation a read sends (`GetItem`, and `BatchGetItem`: a cold read's pointer
 * and catalog), through the core's own SDK client and command classes, answered by a canned HTTP response: a reader
 * the L2 serves has never sent a table request, and makes its first when the cache fails, with every other reader of
 * the fleet (the SDK's first request of an operation costs several times a later one: credentials, endpoint resolution,
 * serialization, signing, deserialization, all run here). The answer is given by a middleware on each command (not
 * the client, so no read of the reader's meets it) innermost in the stack, which never calls the HTTP handler:
 * nothing is sent, and no table read is counted. Sequential, after the L2's first connection; resolves to how many
 * ran to a deserialized answer, never rejects.
 */
export async function warmTableReads(deps: Pick<TierDeps, 'dynamoDB' | 'table'>): Promise<number> {
  const { dynamoDB, table } = deps;
  const tableName = table.tableName;
  const requests: [number, unknown][] = [
    [0, { Item: WARM_UP_ITEM }],
    [1, { Responses: { [tableName]: [WARM_UP_ITEM] }, UnprocessedKeys: {} }],
  ];
  let answered = 0;
  for (const [operation, answer] of requests) {
    try {
      const [GetItem, BatchGetItem] = table.commands;
      const command = operation === 0
        ? new GetItem({ TableName: tableName, Key: WARM_UP_KEY })
        : new BatchGetItem({ RequestItems: { [tableName]: { Keys: [WARM_UP_KEY, { ...WARM_UP_KEY, [SORT_KEY]: { S: 'v000001' } }] } } });
      (command.middlewareStack as { add(middleware: unknown, options: object): void })
        .add(cannedAnswer(JSON.stringify(answer)), { step: 'deserialize', priority: 'low', name: 'promptServingWarmUp' });
      await (dynamoDB.send as (command: unknown) => Promise<unknown>).call(dynamoDB, command);
      answered++;
    } catch {
      // a warm-up that fails costs the first real request what it would have cost anyway
    }
  }
  return answered;
}

/** A middleware that answers with `body` (HTTP 200, as DynamoDB would) without calling the handler after it. */
function cannedAnswer(body: string) {
  return () => async () => ({
    response: {
      statusCode: 200,
      reason: 'OK',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'content-length': String(Buffer.byteLength(body)), 'x-amzn-requestid': 'warm-up' },
      // A stream, as the HTTP handler gives one, so the SDK's stream collector runs too.
      body: Readable.from([Buffer.from(body)]),
    },
  });
}
