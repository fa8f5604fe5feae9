import { WARM_UP_PROMPT_ID } from '../../src/runtime/table-warm-up';

/**
 * Counts AWS SDK v3 commands sent by a client, by command name, with a middleware (no mocks: the calls
 * still reach the real DynamoDB Local / Bedrock stand-in).
 *
 * The cache tier's table warm-up (src/runtime/table-warm-up.ts, `warmTableReads`) runs a `GetItem` and a `BatchGetItem`
 * naming the reserved id {@link WARM_UP_PROMPT_ID} through a cache reader's client, answered inside the process:
 * nothing is sent, so they are counted apart ({@link CallCounter.warmUps}), not as table reads.
 */
export class CallCounter {
  private readonly counts = new Map<string, number>();
  private readonly warmUpCounts = new Map<string, number>();

  /** Adds the counting middleware to `client` and returns the client. */
  attach<C extends { middlewareStack: { add: (...args: any[]) => void } }>(client: C): C {
    client.middlewareStack.add(
      (next: any, context: any) => async (args: any) => {
        const name = String(context.commandName ?? 'unknown').replace(/Command$/, '');
        const counts = namesWarmUp(args?.input) ? this.warmUpCounts : this.counts;
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return next(args);
      },
      { step: 'initialize', name: 'cdkPromptServingCallCounter', override: true },
    );
    return client;
  }

  /** Calls of one command (`GetItem`, `TransactWriteItems`, `GetPrompt`, …). */
  count(command: string): number {
    return this.counts.get(command) ?? 0;
  }

  /** Every write command: PutItem, UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems. */
  writes(): number {
    return ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']
      .reduce((sum, c) => sum + this.count(c), 0);
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  /** The cache tier's warm-up calls (answered in the process, never sent), by command name. */
  warmUps(): Record<string, number> {
    return Object.fromEntries(this.warmUpCounts);
  }

  reset(): void {
    this.counts.clear();
    this.warmUpCounts.clear();
  }
}

/** Whether a `GetItem` or `BatchGetItem` input names only the warm-up's reserved id. */
function namesWarmUp(input: any): boolean {
  const keys: any[] = input?.Key !== undefined ? [input.Key]
    : Object.values(input?.RequestItems ?? {}).flatMap((r: any) => r?.Keys ?? []);
  return keys.length > 0 && keys.every((k) => k?.prompt_id?.S === WARM_UP_PROMPT_ID);
}
