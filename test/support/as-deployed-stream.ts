/**
 * Lambda's DynamoDB event source mapping, driven from the template's `AWS::Lambda::EventSourceMapping` properties:
 * `FilterCriteria`, `BatchSize`, `BisectBatchOnFunctionError`, `FunctionResponseTypes` (`ReportBatchItemFailures`),
 * `MaximumRetryAttempts` and the `DestinationConfig.OnFailure` record, over DynamoDB Local's streams API
 * (test/support/stream-poller.ts). No jest globals.
 */
import { LambdaStreamRecord, StreamPoller } from './stream-poller';

/** What Lambda sends to the on-failure destination for a batch it gave up on (the documented invocation record). */
export interface OnFailureRecord {
  readonly version: '1.0';
  readonly timestamp: string;
  readonly requestContext: { readonly condition: 'RetryAttemptsExhausted'; readonly approximateInvokeCount: number };
  readonly DDBStreamBatchInfo: {
    readonly shardId: string;
    readonly startSequenceNumber: string;
    readonly endSequenceNumber: string;
    readonly batchSize: number;
    readonly streamArn: string;
  };
}

export interface MappingDriver {
  readonly poller: StreamPoller;
  /** The on-failure destination's messages so far. */
  onFailure(): OnFailureRecord[];
}

type Invoke = (event: { Records: LambdaStreamRecord[] }) => Promise<{ batchItemFailures?: { itemIdentifier: string }[] } | void>;

export function driveMapping(mapping: Record<string, any>, streamArn: string, endpoint: string, invoke: Invoke): MappingDriver {
  const filters: { Pattern: string }[] = mapping.FilterCriteria?.Filters ?? [];
  if (filters.length > 1) throw new Error('more than one filter: extend the driver');
  if (mapping.MaximumRetryAttempts === undefined || mapping.MaximumRetryAttempts === -1) {
    throw new Error('MaximumRetryAttempts is unbounded: a poisoned record would block its shard for the record\'s lifetime');
  }
  if (!mapping.DestinationConfig?.OnFailure?.Destination) throw new Error('no on-failure destination: failed batches would be lost');
  const reportsFailures = (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures');
  const poller = new StreamPoller({
    streamArn,
    endpoint,
    filterPattern: filters.length === 1 ? JSON.parse(filters[0].Pattern) : {},
    batchSize: mapping.BatchSize ?? 100,
    maxRetries: mapping.MaximumRetryAttempts,
    bisect: mapping.BisectBatchOnFunctionError ?? false,
    // Without ReportBatchItemFailures, Lambda ignores what the function returns.
    invoke: async (event) => {
      const result = await invoke(event);
      return reportsFailures ? result : undefined;
    },
  });
  return {
    poller,
    onFailure: () => poller.dlq.map((batch) => {
      const invokes = poller.invocations.filter((i) => i.sequenceNumbers.includes(batch[0].dynamodb.SequenceNumber)).length;
      return {
        version: '1.0',
        timestamp: new Date().toISOString(),
        requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: invokes },
        DDBStreamBatchInfo: {
          shardId: batch[0].eventID.split(':')[0],
          startSequenceNumber: batch[0].dynamodb.SequenceNumber,
          endSequenceNumber: batch[batch.length - 1].dynamodb.SequenceNumber,
          batchSize: batch.length,
          streamArn,
        },
      };
    }),
  };
}
