/** The client's options once resolved (options.ts): its own module, so the modules that read them import no option parsing. */
/** Options with every default applied, times in milliseconds. */
export interface ResolvedOptions {
  readonly tableName: string;
  readonly maxAgeMs: number;
  readonly maxEntries: number;
  readonly notFoundMaxAgeMs: number;
  readonly staleWhileRevalidateMs: number;
  readonly staleIfErrorMs: number;
  readonly catalogMaxAgeMs: number;
  readonly requestTimeoutMs: number;
  readonly maxAttempts: number;
  readonly l2TimeoutMs: number;
  readonly l2ConnectTimeoutMs: number;
  readonly epochPollIntervalMs: number;
}
