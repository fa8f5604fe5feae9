/**
 * Read provenance: where each prompt a client returns came from, and the optional per-read hook with its helpers.
 *
 * Every served prompt carries `provenance` (`source`, `stale`, `readAt`, `ageSeconds`): a small frozen object built
 * once per copy (the copy read from the table or L2, its in-memory variant, its stale variant), so a cached read
 * allocates nothing for it. `onRead(info, client)`, a client option, is called once per successful `getPrompt`; when it
 * is not set the read path only compares it with `undefined`. The hook's helpers (a structured log line, CloudWatch
 * EMF metrics, OpenTelemetry span attributes, several hooks in one) are in ./read-hooks.ts.
 */
import type { PromptClientStats } from './stats';

/** The tier that answered a read: memory, the shared cache, the table, or the caller's fallback. */
export type ReadSource = 'l1' | 'l2' | 'table' | 'fallback';

/** Where a served prompt came from. */
export interface Provenance {
  /** The tier that answered the read that returned this prompt. */
  readonly source: ReadSource;
  /** `true` when the copy is past `maxAgeSeconds` (stale-while-revalidate, stale-if-error) or a fallback. */
  readonly stale: boolean;
  /**
   * When this copy was read from its source (epoch ms): the table read behind it (for an L2 fill, the reader's table
   * read; for a stream value, the L2 read); for a fallback, when it was served.
   */
  readonly readAt: number;
  /** Seconds from `readAt` to now (computed when read; never negative). */
  readonly ageSeconds: number;
}

/** What `onRead` receives for each successful `getPrompt` (built only when a hook is set). */
export interface ReadInfo {
  /** The serving table. */
  readonly tableName: string;
  /** The prompt id read. */
  readonly promptId: string;
  /** The version number served: with a rollout, the served arm's version (0 for a fallback). */
  readonly version: number;
  /** The exact version asked for; `undefined` for CURRENT. */
  readonly requestedVersion: number | undefined;
  /** The served content's checksum. */
  readonly checksum: string;
  readonly source: ReadSource;
  readonly stale: boolean;
  readonly ageSeconds: number;
  /** The label read (`getPrompt(id, { label })`); `undefined` for CURRENT and exact versions. */
  readonly label: string | undefined;
  /** The label's rollout, while one is in progress; `undefined` without (or for a fallback). */
  readonly rolloutId: string | undefined;
  /** The rollout arm served (`A`: the label's own version, `B`: the candidate); `undefined` without a rollout. */
  readonly arm: 'A' | 'B' | undefined;
}

/** Called once per successful read; an exception it throws is reported once on stderr and never fails the read. */
export type OnRead = (info: ReadInfo, client: ReadingClient) => void;

/** What a hook may ask of the client that read (a `PromptClient`): its counters. */
export interface ReadingClient {
  stats(): PromptClientStats;
}

class ServedProvenance implements Provenance {
  declare readonly source: ReadSource;
  declare readonly stale: boolean;
  declare readonly readAt: number;

  constructor(source: ReadSource, stale: boolean, readAt: number) {
    this.source = source;
    this.stale = stale;
    this.readAt = readAt;
    Object.freeze(this);
  }

  get ageSeconds(): number {
    return Math.max(0, (Date.now() - this.readAt) / 1000);
  }

  toJSON(): Provenance {
    return { source: this.source, stale: this.stale, readAt: this.readAt, ageSeconds: this.ageSeconds };
  }
}

/** A provenance object (frozen). */
export function provenance(source: ReadSource, stale: boolean, readAt: number): Provenance {
  return new ServedProvenance(source, stale, readAt);
}

/** The per-read info of a served prompt. */
export function readInfo(
  tableName: string,
  prompt: {
    id: string;
    version: number;
    checksum: string;
    provenance: Provenance;
    label?: string;
    rollout?: { readonly rolloutId: string; readonly arm: 'A' | 'B' };
  },
  requestedVersion: number | undefined,
): ReadInfo {
  const p = prompt.provenance;
  const rollout = prompt.rollout;
  return {
    tableName,
    promptId: prompt.id,
    version: prompt.version,
    requestedVersion,
    checksum: prompt.checksum,
    source: p.source,
    stale: p.stale,
    ageSeconds: p.ageSeconds,
    label: prompt.label,
    rolloutId: rollout?.rolloutId,
    arm: rollout?.arm,
  };
}
