/**
 * The convergence world shared by test/runtime/convergence.test.ts (a bounded number of fast-check cases in the
 * test run) and bench/convergence.bench.ts (a longer run): DynamoDB Local with its stream, a TLS cluster-mode
 * redis-server whose ACL users hold the library's reader and writer rules, the REAL write-through engine
 * (src/invalidation/write-through.ts, through the Valkey adapter as the writer user), Node readers (PromptClient
 * over the built-in adapter as the reader user) and a Python reader process (python/tests/convergence_reader.py).
 *
 * A case is a random sequence of operations on a few prompts — syncs, activations (rollbacks), the sync's old
 * repair that restarts `revision` at 1, hand edits (revision removed or lowered, content changed at the same
 * revision), deletions, pointer rows removed, catalog rewrites (revision up, restarted or absent), the table
 * deleted and re-created under the same name, stream deliveries shuffled and duplicated, late deliveries of a
 * deleted table's stream, redeliveries of old records — with reads interleaved. Then the stream is drained and
 * every reader must serve exactly what the table says (pointer and catalog), within a few epoch polls.
 * No jest globals.
 */
import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import {
  CreateTableCommand, DeleteItemCommand, DeleteTableCommand, DescribeTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import * as fc from 'fast-check';
import { STREAM_FILTER_PATTERN } from '../../src/invalidation/filter';
import { ValkeyWriter } from '../../src/invalidation/valkey-writer';
import { Log, writeThrough } from '../../src/invalidation/write-through';
import { cacheTier, PromptClient, PromptNotFoundError } from '../../src/runtime';
import { L2UnavailableError, ValkeyL2 } from '../../src/runtime/valkey';
import {
  Attr, bloomBuild, bloomMightContain, bloomParameters, CATALOG_ID, checksum, CURRENT, decodeStreamValue, epochIncarnation, l2EpochKey,
  l2FillPattern, l2ItemKey, l2KeyPattern, L2_READER_COMMANDS, L2_WRITER_COMMANDS, PARTITION_KEY, SORT_KEY, STATUS_ACTIVE, STATUS_DELETED,
  toDynamoJson, versionKey,
} from '../../src/schema';
import { catalogProblem } from '../../src/schema/catalog';
import { fromItem, toItem } from '../../src/schema/ddb-codec';
import { RedisServer, startRedisServer } from '../support/redis-server';
import { LambdaStreamRecord, StreamPoller } from '../support/stream-poller';
import { localDynamoDBClient, localEndpoint } from '../support/table';

export const IDS = ['alpha', 'beta', 'gamma'] as const;
export type Id = typeof IDS[number];

/** One operation of a case. */
export type Op =
  | { kind: 'sync'; id: Id }
  | { kind: 'activate'; id: Id; back: number }
  | { kind: 'repair'; id: Id }
  | { kind: 'handEdit'; id: Id; edit: 'removeRevision' | 'lowerRevision' | 'sameRevisionNewContent' }
  | { kind: 'delete'; id: Id }
  | { kind: 'removeRow'; id: Id }
  | { kind: 'catalog'; revision: 'next' | 'restart' | 'absent' }
  | { kind: 'recreate'; drainFirst: boolean }
  | { kind: 'deliver'; order: number[]; duplicates: number[]; batch: number }
  | { kind: 'lateOldStream' }
  | { kind: 'redeliverOld'; picks: number[] }
  | { kind: 'read'; reader: number; id: Id };

/** Random operations, weighted towards writes and deliveries. */
export const opArbitrary: fc.Arbitrary<Op> = (() => {
  const id = fc.constantFrom(...IDS);
  return fc.oneof(
    { weight: 5, arbitrary: id.map((i) => ({ kind: 'sync' as const, id: i })) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('activate' as const), id, back: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 2, arbitrary: id.map((i) => ({ kind: 'repair' as const, id: i })) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('handEdit' as const), id, edit: fc.constantFrom('removeRevision' as const, 'lowerRevision' as const, 'sameRevisionNewContent' as const),
      }),
    },
    { weight: 1, arbitrary: id.map((i) => ({ kind: 'delete' as const, id: i })) },
    { weight: 1, arbitrary: id.map((i) => ({ kind: 'removeRow' as const, id: i })) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('catalog' as const), revision: fc.constantFrom('next' as const, 'restart' as const, 'absent' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('recreate' as const), drainFirst: fc.boolean() }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('deliver' as const),
        order: fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 12 }),
        duplicates: fc.array(fc.nat(50), { maxLength: 4 }),
        batch: fc.integer({ min: 1, max: 10 }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'lateOldStream' as const }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('redeliverOld' as const), picks: fc.array(fc.nat(200), { minLength: 1, maxLength: 5 }) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), reader: fc.integer({ min: 0, max: 2 }), id }) },
  );
})();

/** What a reader serves for one id. */
export type Answer = { version: number; checksum: string } | 'notFound' | string;

const PYTHON_READER = path.resolve(__dirname, '../../python/tests/convergence_reader.py');
const READER = 'conv-reader';
const WRITER = 'conv-writer';
/** Every table: the rules of src/schema/l2.ts with `*` as the table (the tables of a run have random names). */
const readerRules = `nopass %R~${l2KeyPattern('*')} ~${l2FillPattern('*')} -@all ${L2_READER_COMMANDS.map((c) => `+${c}`).join(' ')}`;
const writerRules = `nopass ~${l2KeyPattern('*')} -@all ${L2_WRITER_COMMANDS.map((c) => `+${c}`).join(' ')}`;

/** The long-lived parts of a run: cache, writer connection, Python reader process. */
export class World {
  static async start(): Promise<World> {
    const cache = await startRedisServer({
      tls: true,
      cluster: true,
      users: [{ name: READER, password: 'unused', rules: readerRules }, { name: WRITER, password: 'unused', rules: writerRules }],
    });
    const world = new World(cache);
    await world.writerAnswers();
    return world;
  }

  readonly admin: DynamoDBClient = localDynamoDBClient();
  readonly writer: ValkeyWriter;
  private readonly python: ChildProcessWithoutNullStreams;
  private readonly answers: readline.Interface;
  private readonly pending: ((line: string) => void)[] = [];
  private cases = 0;

  private constructor(readonly cache: RedisServer) {
    this.writer = this.adapter(WRITER);
    this.python = spawn(process.env.PYTHON ?? '/usr/bin/python3', [PYTHON_READER], {
      env: {
        ...process.env,
        DYNAMODB_ENDPOINT: localEndpoint(),
        CACHE_PORT: String(cache.port),
        CACHE_USER: READER,
        CACHE_CA: path.join(cache.certDir!, 'ca.crt'),
        AWS_EC2_METADATA_DISABLED: 'true',
      },
    });
    this.python.stderr.on('data', (d: Buffer) => { process.stderr.write(`[python reader] ${d}`); });
    this.answers = readline.createInterface({ input: this.python.stdout });
    this.answers.on('line', (line) => this.pending.shift()?.(line));
  }

  adapter(user: string): ValkeyWriter {
    return new ValkeyWriter({
      host: 'localhost',
      port: this.cache.port,
      tls: true,
      ca: this.cache.ca,
      cluster: true,
      username: user,
      password: 'unused',
      connectTimeoutMs: 5000,
      commandTimeoutMs: 2000,
    });
  }

  /**
   * Waits (at most 30 s) until the writer connection answers: its first TLS cluster connection can outlast its
   * connect timeout on a loaded machine, and the writer then backs off before trying again, failing calls meanwhile.
   */
  async writerAnswers(): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await this.writer.get(l2EpochKey('conv-probe'));
        return;
      } catch (err) {
        if (!(err instanceof L2UnavailableError) || Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  /** The Python reader's answers for `ids` of `table`. */
  pythonRead(table: string, ids: readonly string[]): Promise<Record<string, Answer>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the Python reader did not answer within 20 s')), 20_000);
      this.pending.push((line) => {
        clearTimeout(timer);
        resolve(JSON.parse(line));
      });
      this.python.stdin.write(JSON.stringify({ table, ids }) + '\n');
    });
  }

  /** A fresh table name for the next case. */
  nextTable(): string {
    return `conv-${process.pid}-${++this.cases}-${Math.floor(Math.random() * 1e6)}`;
  }

  async stop(): Promise<void> {
    this.python.stdin.end();
    await new Promise((resolve) => {
      if (this.python.exitCode !== null) resolve(undefined);
      else this.python.once('exit', resolve);
    });
    await this.writer.close();
    this.admin.destroy();
    await this.cache.stop();
  }
}

/** One case: a table (re-created at will), its stream(s), Node readers, and a model of what was written. */
export class Case {
  /** Every operation applied, for the report of a failing case. */
  readonly trace: string[] = [];
  private streamArn = '';
  private poller!: StreamPoller;
  /** Records read from a deleted table's stream and not yet delivered. */
  private oldPending: LambdaStreamRecord[] = [];
  private readonly delivered: LambdaStreamRecord[] = [];
  private readonly versions = new Map<Id, number>();
  private readonly revisions = new Map<string, number>();
  private readonly readers: { prompts: PromptClient; l2: ValkeyL2; ddb: DynamoDBClient }[] = [];

  constructor(private readonly world: World, readonly table: string, nodeReaders = 2) {
    for (let i = 0; i < nodeReaders; i++) {
      const l2 = world.adapter(READER);
      const ddb = localDynamoDBClient({ maxAttempts: 1 });
      const prompts = new PromptClient({
        tableName: table,
        dynamoDBClient: ddb,
        l2: cacheTier(l2),
        maxAgeSeconds: 60,
        epochPollIntervalMs: 50,
        l2TimeoutMs: 2000,
        requestTimeoutMs: 5000,
      });
      this.readers.push({ prompts, l2, ddb });
    }
  }

  async create(): Promise<void> {
    await this.world.writerAnswers();
    const admin = this.world.admin;
    await admin.send(new CreateTableCommand({
      TableName: this.table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: PARTITION_KEY, AttributeType: 'S' }, { AttributeName: SORT_KEY, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: PARTITION_KEY, KeyType: 'HASH' }, { AttributeName: SORT_KEY, KeyType: 'RANGE' }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
    }));
    const { Table } = await admin.send(new DescribeTableCommand({ TableName: this.table }));
    this.streamArn = Table!.LatestStreamArn!;
    this.poller?.close();
    this.poller = new StreamPoller({
      streamArn: this.streamArn,
      endpoint: localEndpoint(),
      filterPattern: STREAM_FILTER_PATTERN,
      invoke: (event) => this.invoke(event.Records),
      batchSize: 100,
      maxRetries: 2,
    });
  }

  private async invoke(records: LambdaStreamRecord[]) {
    this.delivered.push(...records);
    return writeThrough(records, this.table, this.world.writer, quiet);
  }

  async apply(op: Op): Promise<void> {
    this.trace.push(JSON.stringify(op));
    const admin = this.world.admin;
    switch (op.kind) {
      case 'sync': {
        const v = (this.versions.get(op.id) ?? 0) + 1;
        this.versions.set(op.id, v);
        await this.putPointer(op.id, v, `${op.id} v${v}`, this.nextRevision(op.id));
        break;
      }
      case 'activate': {
        const latest = this.versions.get(op.id) ?? 0;
        if (latest === 0) return;
        const v = Math.max(1, latest - op.back);
        await this.putPointer(op.id, v, `${op.id} v${v}`, this.nextRevision(op.id));
        break;
      }
      case 'repair': {
        const v = this.versions.get(op.id) ?? 1;
        this.revisions.set(op.id, 1);
        await this.putPointer(op.id, v, `${op.id} v${v} repaired`, 1);
        break;
      }
      case 'handEdit': {
        const current = await this.pointer(op.id);
        if (current === undefined) return;
        const rev = this.revisions.get(op.id) ?? 0;
        const v = Number(current[Attr.versionNumber] ?? 1);
        if (op.edit === 'removeRevision') {
          this.revisions.set(op.id, 0);
          await this.putPointer(op.id, v, `${op.id} v${v} hand-edited`, undefined);
        } else if (op.edit === 'lowerRevision') {
          this.revisions.set(op.id, Math.max(0, rev - 3));
          await this.putPointer(op.id, v, `${op.id} v${v} lowered`, Math.max(0, rev - 3));
        } else {
          await this.putPointer(op.id, v, `${op.id} v${v} same revision ${Date.now()}`, rev === 0 ? undefined : rev);
        }
        break;
      }
      case 'delete': {
        const current = await this.pointer(op.id);
        if (current === undefined) return;
        const v = Number(current[Attr.versionNumber] ?? 1);
        await this.putPointer(op.id, v, String(current[Attr.text] ?? ''), this.nextRevision(op.id), STATUS_DELETED);
        break;
      }
      case 'removeRow':
        await admin.send(new DeleteItemCommand({ TableName: this.table, Key: key(op.id) }));
        break;
      case 'catalog': {
        const active: string[] = [];
        for (const id of IDS) if ((await this.pointer(id))?.[Attr.status] === STATUS_ACTIVE) active.push(id);
        const { bits, hashes } = bloomParameters(active.length);
        const revision = op.revision === 'next' ? this.nextRevision(CATALOG_ID) : op.revision === 'restart' ? 1 : undefined;
        if (revision !== undefined) this.revisions.set(CATALOG_ID, revision);
        await admin.send(new PutItemCommand({
          TableName: this.table,
          Item: toItem({
            [Attr.promptId]: CATALOG_ID,
            [Attr.version]: CURRENT,
            [Attr.bloom]: bloomBuild(active, bits, hashes),
            [Attr.bloomBits]: bits,
            [Attr.bloomHashes]: hashes,
            [Attr.count]: active.length,
            ...(revision === undefined ? {} : { [Attr.revision]: revision }),
          }),
        }));
        break;
      }
      case 'recreate': {
        if (op.drainFirst) await this.poller.drain();
        else this.oldPending.push(...await this.poller.read());
        await admin.send(new DeleteTableCommand({ TableName: this.table }));
        this.versions.clear();
        this.revisions.clear();
        await this.create();
        // The sync's first run against the new table writes its catalog: the new incarnation's first record.
        await this.apply({ kind: 'catalog', revision: 'next' });
        break;
      }
      case 'deliver': {
        const records = await this.poller.read();
        if (records.length === 0) return;
        const order = records.map((r, i) => ({ r, k: op.order[i % op.order.length] ?? i })).sort((a, b) => a.k - b.k).map((x) => x.r);
        const dups = op.duplicates.map((d) => records[d % records.length]);
        const all = [...order, ...dups];
        for (let i = 0; i < all.length; i += op.batch) await this.invoke(all.slice(i, i + op.batch));
        break;
      }
      case 'lateOldStream':
        if (this.oldPending.length > 0) await this.invoke(this.oldPending.splice(0));
        break;
      case 'redeliverOld':
        if (this.delivered.length > 0) await this.invoke(op.picks.map((p) => this.delivered[p % this.delivered.length]));
        break;
      case 'read':
        if (op.reader < this.readers.length) await this.readers[op.reader].prompts.getPrompt(op.id).catch(() => undefined);
        else await this.world.pythonRead(this.table, [op.id]);
        break;
    }
  }

  /** Drains the stream, then waits (at most `timeoutMs`) until every reader serves what the table says. */
  async converge(timeoutMs = 8000): Promise<{
    ok: boolean; expected: Record<string, Answer>; got: Record<string, Record<string, Answer>>; elapsedMs: number;
  }> {
    // The sync keeps the catalog in step with the pointers (it rewrites it whenever membership changes): a catalog
    // that rules out an ACTIVE pointer is a state no reader can be held to, so the reconcile's rewrite ends the case
    // (with its revision restarted, as the old repair did).
    if (!(await this.catalogConsistent())) await this.apply({ kind: 'catalog', revision: 'restart' });
    await this.poller.drain();
    const drainedAt = performance.now();
    const expected = await this.expected();
    const l2Problems = await this.l2Problems();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got: Record<string, Record<string, Answer>> = {};
      for (let i = 0; i < this.readers.length; i++) got[`node${i}`] = await this.nodeRead(i);
      got.python = await this.world.pythonRead(this.table, IDS);
      if (l2Problems.length > 0) got.l2 = Object.fromEntries(l2Problems.map((p) => [p, 'differs from the table']));
      const ok = l2Problems.length === 0 && Object.values(got).every((answers) => IDS.every((id) => same(answers[id], expected[id])));
      if (ok || Date.now() > deadline) return { ok, expected, got, elapsedMs: performance.now() - drainedAt };
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
  }

  async close(): Promise<void> {
    for (const r of this.readers) {
      await r.prompts.close();
      await r.l2.close();
      r.ddb.destroy();
    }
    this.poller?.close();
    await this.world.admin.send(new DeleteTableCommand({ TableName: this.table })).catch(() => undefined);
  }

  private async nodeRead(i: number): Promise<Record<string, Answer>> {
    const out: Record<string, Answer> = {};
    for (const id of IDS) {
      try {
        const p = await this.readers[i].prompts.getPrompt(id);
        out[id] = { version: p.version, checksum: p.checksum };
      } catch (err) {
        out[id] = err instanceof PromptNotFoundError ? 'notFound' : `error: ${(err as Error).name}: ${(err as Error).message}`;
      }
    }
    return out;
  }

  /**
   * The L2 once drained: for every row of the table (pointers and the catalog) the stream value of the epoch's
   * incarnation is the row itself; for a row the table does not hold, no such value says otherwise.
   */
  private async l2Problems(): Promise<string[]> {
    await this.world.writerAnswers();
    const epoch = await this.world.writer.get(l2EpochKey(this.table));
    const incarnation = epochIncarnation(epoch);
    const problems: string[] = [];
    for (const id of [...IDS, CATALOG_ID]) {
      const { Item } = await this.world.admin.send(new GetItemCommand({ TableName: this.table, Key: key(id), ConsistentRead: true }));
      const raw = await this.world.writer.get(l2ItemKey(this.table, id, CURRENT));
      const value = raw === null ? undefined : decodeStreamValue(raw, id, CURRENT);
      const current = value !== undefined && value.inc === incarnation ? value : undefined;
      if (Item === undefined) {
        if (current?.item) problems.push(id);
      } else if (current?.item == null || canonical(current.item) !== canonical(toDynamoJson(Item))) {
        problems.push(id);
      }
    }
    return problems;
  }

  /** `false` when the table's catalog rules out an ACTIVE pointer. */
  private async catalogConsistent(): Promise<boolean> {
    const expected = await this.expected();
    for (const id of IDS) {
      if (expected[id] === 'notFound' && (await this.pointer(id))?.[Attr.status] === STATUS_ACTIVE) return false;
    }
    return true;
  }

  /** What the table says each id is: the catalog rules it out, the pointer is absent or deleted, or the pointer. */
  private async expected(): Promise<Record<string, Answer>> {
    const catalog = await this.read(CATALOG_ID);
    const fields = catalog === undefined ? undefined : {
      bloom: catalog[Attr.bloom],
      bits: catalog[Attr.bloomBits],
      hashes: catalog[Attr.bloomHashes],
      count: catalog[Attr.count],
      revision: catalog[Attr.revision],
    };
    const filter = fields !== undefined && catalogProblem(fields) === undefined ? fields : undefined;
    const out: Record<string, Answer> = {};
    for (const id of IDS) {
      const p = await this.pointer(id);
      if (filter !== undefined && !bloomMightContain(filter.bloom as Uint8Array, filter.bits as number, filter.hashes as number, id)) {
        out[id] = 'notFound';
      } else if (p === undefined || p[Attr.status] === STATUS_DELETED) {
        out[id] = 'notFound';
      } else {
        out[id] = { version: p[Attr.versionNumber] as number, checksum: p[Attr.checksum] as string };
      }
    }
    return out;
  }

  private pointer(id: string) {
    return this.read(id);
  }

  private async read(id: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.world.admin.send(new GetItemCommand({ TableName: this.table, Key: key(id), ConsistentRead: true }));
    return Item === undefined ? undefined : fromItem(Item);
  }

  private nextRevision(id: string): number {
    const r = (this.revisions.get(id) ?? 0) + 1;
    this.revisions.set(id, r);
    return r;
  }

  private async putPointer(id: Id, v: number, text: string, revision: number | undefined, status = STATUS_ACTIVE): Promise<void> {
    const content = { template_type: 'TEXT', text, input_variables: [] };
    await this.world.admin.send(new PutItemCommand({
      TableName: this.table,
      Item: toItem({ ...content, [Attr.promptId]: id, [Attr.version]: versionKey(v), [Attr.versionNumber]: v, [Attr.checksum]: checksum(content) }),
    }));
    await this.world.admin.send(new PutItemCommand({
      TableName: this.table,
      Item: toItem({
        ...content,
        [Attr.promptId]: id,
        [Attr.version]: CURRENT,
        [Attr.versionNumber]: v,
        [Attr.checksum]: checksum(content),
        [Attr.status]: status,
        ...(revision === undefined ? {} : { [Attr.revision]: revision }),
      }),
    }));
  }
}

const quiet: Log = () => undefined;

function key(id: string) {
  return { [PARTITION_KEY]: { S: id }, [SORT_KEY]: { S: CURRENT } };
}

/** JSON with keys sorted at every level. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function same(a: Answer | undefined, b: Answer | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
