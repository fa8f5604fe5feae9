/**
 * A stand-in for Lambda's DynamoDB event source mapping, driving a handler from DynamoDB Local's streams API
 * (DescribeStream, GetShardIterator, GetRecords): records converted to Lambda's event shape (binary as base64,
 * `ApproximateCreationDateTime` in epoch seconds), the filter criteria applied, batches of `batchSize`, partial
 * batch responses honoured (retry from the first reported sequence number), failing batches bisected, a record
 * retried at most `maxRetries` times and then sent to the on-failure destination (`dlq`).
 * Retry and bisect follow the documented semantics (a split does not count as a retry). No jest globals.
 */
import {
  DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, _Record,
} from '@aws-sdk/client-dynamodb-streams';

export interface LambdaStreamRecord {
  eventID: string;
  eventName: string;
  eventSource: 'aws:dynamodb';
  eventSourceARN: string;
  awsRegion: string;
  dynamodb: {
    ApproximateCreationDateTime?: number;
    Keys: Record<string, { S?: string } & Record<string, unknown>>;
    NewImage?: Record<string, unknown>;
    SequenceNumber: string;
    SizeBytes?: number;
    StreamViewType?: string;
  };
}

export interface PollerOptions {
  readonly streamArn: string;
  readonly endpoint: string;
  readonly filterPattern: unknown;
  readonly invoke: (event: { Records: LambdaStreamRecord[] }) => Promise<{ batchItemFailures?: { itemIdentifier: string }[] } | void>;
  /** @default 100 */
  readonly batchSize?: number;
  /** @default 2 */
  readonly maxRetries?: number;
  /** @default true */
  readonly bisect?: boolean;
}

export class StreamPoller {
  /** What the on-failure destination received: the records given up on. */
  readonly dlq: LambdaStreamRecord[][] = [];
  /** Every invocation's records' sequence numbers, and whether it threw. */
  readonly invocations: { sequenceNumbers: string[]; threw: boolean; failures: number }[] = [];
  private readonly client: DynamoDBStreamsClient;
  private readonly iterators = new Map<string, string | undefined>();

  constructor(private readonly options: PollerOptions) {
    this.client = new DynamoDBStreamsClient({ endpoint: options.endpoint, region: 'us-east-1' });
  }

  /** Reads every record available now from every shard and delivers them, in order per shard. Returns how many were delivered. */
  async drain(): Promise<number> {
    const records = await this.read();
    const wanted = records.filter((r) => matches(this.options.filterPattern, r));
    const size = this.options.batchSize ?? 100;
    for (let i = 0; i < wanted.length; i += size) await this.deliver(wanted.slice(i, i + size), 0);
    return wanted.length;
  }

  /** New records since the last call, converted to the Lambda event shape. */
  async read(): Promise<LambdaStreamRecord[]> {
    const { StreamDescription } = await this.client.send(new DescribeStreamCommand({ StreamArn: this.options.streamArn }));
    const out: LambdaStreamRecord[] = [];
    for (const shard of StreamDescription?.Shards ?? []) {
      let iterator = this.iterators.get(shard.ShardId!);
      if (!this.iterators.has(shard.ShardId!)) {
        iterator = (await this.client.send(new GetShardIteratorCommand({
          StreamArn: this.options.streamArn, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON',
        }))).ShardIterator;
      }
      while (iterator) {
        const page = await this.client.send(new GetRecordsCommand({ ShardIterator: iterator }));
        out.push(...(page.Records ?? []).map((r) => toLambdaRecord(r, this.options.streamArn)));
        iterator = page.NextShardIterator;
        if ((page.Records ?? []).length === 0) break;
      }
      this.iterators.set(shard.ShardId!, iterator);
    }
    return out;
  }

  close(): void {
    this.client.destroy();
  }

  private async deliver(batch: LambdaStreamRecord[], attempt: number): Promise<void> {
    let failedFrom: number | undefined;
    let threw = false;
    try {
      const result = await this.options.invoke({ Records: batch });
      const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      const index = batch.findIndex((r) => failed.has(r.dynamodb.SequenceNumber));
      failedFrom = failed.size === 0 ? undefined : index === -1 ? 0 : index; // an unknown identifier fails the batch
    } catch {
      threw = true;
      failedFrom = 0;
    }
    this.invocations.push({
      sequenceNumbers: batch.map((r) => r.dynamodb.SequenceNumber), threw, failures: failedFrom === undefined ? 0 : batch.length - failedFrom,
    });
    if (failedFrom === undefined) return;
    const remaining = batch.slice(failedFrom);
    if ((this.options.bisect ?? true) && remaining.length > 1) {
      const mid = Math.ceil(remaining.length / 2);
      await this.deliver(remaining.slice(0, mid), attempt);
      await this.deliver(remaining.slice(mid), attempt);
      return;
    }
    if (attempt >= (this.options.maxRetries ?? 2)) {
      this.dlq.push(remaining);
      return;
    }
    await this.deliver(remaining, attempt + 1);
  }
}

/** An SDK stream record in the shape Lambda hands to a function. */
export function toLambdaRecord(r: _Record, streamArn: string): LambdaStreamRecord {
  const d = r.dynamodb!;
  return {
    eventID: r.eventID!,
    eventName: r.eventName!,
    eventSource: 'aws:dynamodb',
    eventSourceARN: streamArn,
    awsRegion: r.awsRegion ?? 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: d.ApproximateCreationDateTime === undefined
        ? undefined : Math.floor(new Date(d.ApproximateCreationDateTime).getTime() / 1000),
      Keys: toEventImage(d.Keys ?? {}) as LambdaStreamRecord['dynamodb']['Keys'],
      NewImage: d.NewImage === undefined ? undefined : toEventImage(d.NewImage),
      SequenceNumber: d.SequenceNumber!,
      SizeBytes: d.SizeBytes,
      StreamViewType: d.StreamViewType,
    },
  };
}

function toEventImage(image: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(image).map(([k, v]) => [k, toEventValue(v as Record<string, unknown>)]));
}

function toEventValue(av: Record<string, unknown>): unknown {
  const b64 = (b: unknown) => Buffer.from(b as Uint8Array).toString('base64');
  if (av.B !== undefined) return { B: b64(av.B) };
  if (av.BS !== undefined) return { BS: (av.BS as unknown[]).map(b64) };
  if (av.L !== undefined) return { L: (av.L as Record<string, unknown>[]).map(toEventValue) };
  if (av.M !== undefined) return { M: toEventImage(av.M as Record<string, unknown>) };
  const [type] = Object.keys(av).filter((t) => av[t] !== undefined && t !== '$unknown');
  return { [type]: av[type] };
}

/** Lambda's filter rule for the patterns used here: nested objects, leaves are lists of allowed values or `{ prefix }`. */
export function matches(pattern: unknown, value: unknown): boolean {
  if (Array.isArray(pattern)) {
    return pattern.some((allowed) => allowed === value || (typeof (allowed as { prefix?: unknown })?.prefix === 'string'
      && typeof value === 'string' && value.startsWith((allowed as { prefix: string }).prefix)));
  }
  if (pattern === null || typeof pattern !== 'object') return pattern === value;
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(pattern).every(([k, p]) => matches(p, (value as Record<string, unknown>)[k]));
}
