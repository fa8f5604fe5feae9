/**
 * The `onRead` hook's helpers (./provenance.ts has the hook's types): a structured log line per read (`logReads`),
 * CloudWatch Embedded Metric Format metrics (`emfReadMetrics`), OpenTelemetry span attributes
 * (`otelReadAttributes`), and several hooks in one (`combineReadHooks`). Module functions: a reader that does not
 * call one bundles none of it.
 */
import { createRequire } from 'node:module';
import type { OnRead, ReadingClient } from './provenance';
import { Env } from '../schema/env';
import { READER_METRICS_DIMENSION, READER_METRICS_NAMESPACE, ReaderReadMetric } from '../schema/metrics';

/** Runs each hook in turn (an `undefined` is skipped, so optional helpers compose); one that throws does not stop the others. */
export function combineReadHooks(...hooks: (OnRead | undefined)[]): OnRead {
  const set = hooks.filter((h): h is OnRead => h !== undefined);
  // Every hook runs, even after one throws; what async hooks return is awaited together, so a rejection reaches the
  // client (which reports it) instead of being dropped unhandled.
  return (info, client) => {
    let failure: { err: unknown } | undefined;
    let pending: unknown[] | undefined;
    for (const hook of set) {
      try {
        const returned: unknown = hook(info, client);
        if (returned !== null && (typeof returned === 'object' || typeof returned === 'function')) (pending ??= []).push(returned);
      } catch (err) {
        failure ??= { err };
      }
    }
    if (pending !== undefined) {
      return Promise.all(pending).then(() => {
        if (failure !== undefined) throw failure.err;
      }) as unknown as void;
    }
    if (failure !== undefined) throw failure.err;
  };
}

/** Where a helper writes its lines (default: `process.stdout`, unprefixed, so CloudWatch parses JSON and EMF). */
export type LineWriter = (line: string) => void;

const stdout: LineWriter = (line) => { process.stdout.write(line + '\n'); };

/**
 * A hook that writes one structured JSON log line per read:
 * `{"level":"INFO","message":"prompt read","promptId":…,"version":…,"source":…,"stale":…,"ageSeconds":…,"checksum":…}`,
 * plus `requestedVersion` for an exact version, `label` for a labeled read, and `rolloutId` and `arm` while the label
 * has a rollout (each only when set).
 * @example
 * const prompts = new PromptClient({ onRead: logReads() });
 */
export function logReads(options: { readonly write?: LineWriter; readonly level?: string } = {}): OnRead {
  const write = options.write ?? stdout;
  const level = options.level ?? 'INFO';
  return (info) => {
    write(JSON.stringify({
      level,
      message: 'prompt read',
      promptId: info.promptId,
      version: info.version,
      source: info.source,
      stale: info.stale,
      ageSeconds: Math.round(info.ageSeconds * 1000) / 1000,
      checksum: info.checksum,
      ...(info.requestedVersion !== undefined ? { requestedVersion: info.requestedVersion } : {}),
      ...(info.label !== undefined ? { label: info.label } : {}),
      ...(info.rolloutId !== undefined ? { rolloutId: info.rolloutId, arm: info.arm } : {}),
    }));
  };
}

/** Options of {@link emfReadMetrics}. */
export interface EmfReadMetricsOptions {
  /**
   * Seconds between two EMF lines: counts are summed in memory and written at the first read after the interval
   * (and by `flush()`); a read served from `fallback` writes at once.
   * @default 60
   */
  readonly flushIntervalSeconds?: number;
  /** @default - the `TableName` of each read */
  readonly tableName?: string;
  /** @default 'CdkPromptServing' (the construct's reader-metric namespace, which its dashboard and alarm use) */
  readonly namespace?: string;
  readonly write?: LineWriter;
}

/** The EMF helper: `onRead` for the client, `flush()` to write what is counted now (e.g. at the end of a handler). */
export interface EmfReadMetrics {
  readonly onRead: OnRead;
  /** Writes one EMF line per table with the counts since the last one (nothing for a table without reads). */
  flush(): void;
}

/**
 * CloudWatch Embedded Metric Format metrics of the reads ({@link ReaderReadMetric}): reads served by each tier, stale
 * and fallback serves, table reads and L2 errors (from the client's `stats()`, counted from the client's creation). Counts
 * are summed per table and written as one EMF line per table every `flushIntervalSeconds`, so the cost per read is a few
 * additions; a read served from `fallback` writes at once (so the fallback alarm sees it), and `flush()` at the end of a
 * handler writes the rest.
 *
 * Labels and rollout arms are not metric dimensions: each would multiply the metrics by the labels (and rollouts)
 * every reader uses, and a rollout id is new per rollout (a fresh set of custom metrics each time). The EMF line
 * stays one series per table; which label and arm served each read is in the log line (`logReads`) and the span
 * (`otelReadAttributes`), where a query can group by them.
 * @example
 * const metrics = emfReadMetrics();
 * const prompts = new PromptClient({ onRead: metrics.onRead });
 */
export function emfReadMetrics(options: EmfReadMetricsOptions = {}): EmfReadMetrics {
  const intervalMs = (options.flushIntervalSeconds ?? 60) * 1000;
  const write = options.write ?? stdout;
  const namespace = options.namespace ?? READER_METRICS_NAMESPACE;
  /** Per table (the EMF dimension): the reads counted since the last line, and each client reading it with its stats at that line. */
  const tables = new Map<string, TableCounts>();
  /** The table each client's counts go to (a client reads one table). */
  const clientTables = new Map<ReadingClient, TableCounts>();
  let lastFlush = Date.now();
  const flush = (): void => {
    lastFlush = Date.now();
    for (const [tableName, table] of tables) {
      let tableReads = 0;
      let l2Errors = 0;
      for (const [client, base] of table.clients) {
        // from zero at the client's creation: the reads before its first reported one (that read's GetItem) count too
        const stats = client.stats();
        tableReads += stats.storeReads - base.storeReads;
        l2Errors += stats.l2Errors - base.l2Errors;
        table.clients.set(client, { storeReads: stats.storeReads, l2Errors: stats.l2Errors });
      }
      const counts = table.counts;
      if (counts.reads === 0 && tableReads === 0 && l2Errors === 0) continue;
      table.counts = newCounts();
      const values: Record<string, number> = {
        [ReaderReadMetric.servedL1]: counts.l1,
        [ReaderReadMetric.servedL2]: counts.l2,
        [ReaderReadMetric.servedTable]: counts.table,
        [ReaderReadMetric.servedFallback]: counts.fallback,
        [ReaderReadMetric.servedStale]: counts.stale,
        [ReaderReadMetric.tableReads]: tableReads,
        [ReaderReadMetric.l2Errors]: l2Errors,
      };
      write(JSON.stringify({
        _aws: {
          Timestamp: lastFlush,
          CloudWatchMetrics: [{
            Namespace: namespace, Dimensions: [[READER_METRICS_DIMENSION]], Metrics: Object.keys(values).map((Name) => ({ Name, Unit: 'Count' })),
          }],
        },
        [READER_METRICS_DIMENSION]: tableName,
        ...values,
      }));
    }
  };
  const onRead: OnRead = (info, from) => {
    let table = clientTables.get(from);
    if (table === undefined) {
      const tableName = options.tableName ?? (info.tableName || process.env[Env.tableName] || '');
      table = tables.get(tableName);
      if (table === undefined) {
        table = { counts: newCounts(), clients: new Map() };
        tables.set(tableName, table);
      }
      table.clients.set(from, { storeReads: 0, l2Errors: 0 });
      clientTables.set(from, table);
    }
    const counts = table.counts;
    counts.reads++;
    counts[info.source]++;
    if (info.stale && info.source !== 'fallback') counts.stale++;
    // a fallback serve is written at once: a Lambda that serves fallbacks may not read again for long (or ever)
    if (info.source === 'fallback' || Date.now() - lastFlush >= intervalMs) flush();
  };
  return { onRead, flush };
}

interface TableCounts { counts: Counts; clients: Map<ReadingClient, { storeReads: number; l2Errors: number }> }
interface Counts { reads: number; l1: number; l2: number; table: number; fallback: number; stale: number }
const newCounts = (): Counts => ({ reads: 0, l1: 0, l2: 0, table: 0, fallback: 0, stale: 0 });

/** The part of `@opentelemetry/api` the OTel helper uses. */
interface OtelApi {
  readonly trace: { getActiveSpan(): { setAttributes(attributes: Record<string, string | number | boolean>): unknown } | undefined };
}

/**
 * A hook that sets attributes on the active OpenTelemetry span of each read — `gen_ai.prompt.name`,
 * `gen_ai.prompt.version` (the served arm's version), `prompt.source`, `prompt.stale`, `prompt.age_seconds`, and for a
 * labeled read `prompt.label`, with `prompt.rollout.id` and `prompt.rollout.arm` while it has a rollout — or `undefined` when
 * `@opentelemetry/api` cannot be loaded (it is never a dependency of this package: install it, or use a layer that has
 * it). Pass the result straight to the client: `undefined` leaves the hook unset.
 * @example
 * const prompts = new PromptClient({ onRead: otelReadAttributes() });
 */
export function otelReadAttributes(load: () => unknown = loadOtel): OnRead | undefined {
  let api: OtelApi;
  try {
    api = load() as OtelApi;
  } catch {
    return undefined;
  }
  if (typeof api?.trace?.getActiveSpan !== 'function') return undefined;
  return (info) => {
    const span = api.trace.getActiveSpan();
    if (span === undefined) return;
    const attributes: Record<string, string | number | boolean> = {
      'gen_ai.prompt.name': info.promptId,
      'gen_ai.prompt.version': info.version,
      'prompt.source': info.source,
      'prompt.stale': info.stale,
      'prompt.age_seconds': info.ageSeconds,
    };
    if (info.label !== undefined) attributes['prompt.label'] = info.label;
    if (info.rolloutId !== undefined) attributes['prompt.rollout.id'] = info.rolloutId;
    if (info.arm !== undefined) attributes['prompt.rollout.arm'] = info.arm;
    span.setAttributes(attributes);
  };
}

/** `@opentelemetry/api` as the function's own code would resolve it (never bundled: the name is not a literal import). */
function loadOtel(): unknown {
  const name = ['@opentelemetry', 'api'].join('/');
  const base = typeof __filename === 'string' && __filename ? __filename : `${process.env.LAMBDA_TASK_ROOT ?? process.cwd()}/index.js`;
  return createRequire(base)(name);
}
