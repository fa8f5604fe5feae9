/**
 * Counts AWS SDK v3 commands sent by a client, by command name, with a middleware (no mocks: the calls
 * still reach the real DynamoDB Local / Bedrock stand-in).
 */
export class CallCounter {
  private readonly counts = new Map<string, number>();

  /** Adds the counting middleware to `client` and returns the client. */
  attach<C extends { middlewareStack: { add: (...args: any[]) => void } }>(client: C): C {
    client.middlewareStack.add(
      (next: any, context: any) => async (args: any) => {
        const name = String(context.commandName ?? 'unknown').replace(/Command$/, '');
        this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
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

  reset(): void {
    this.counts.clear();
  }
}
