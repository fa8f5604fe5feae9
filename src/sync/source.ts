/**
 * What the sync engine needs from a source of truth (Bedrock Prompt Management, a prompts-as-code
 * directory, or a test double). Sources do the fetching; the engine does compare, plan and write.
 */
import type { PromptContent } from '../schema';

/** What a listing says about one prompt, without fetching its content. */
export interface SourceSummary {
  /** The prompt id (becomes `prompt_id`). */
  readonly id: string;
  /**
   * An opaque token that changes whenever the served content may have changed (Bedrock: the listed
   * version / `updatedAt`; directory: the file's checksum). Equal to the pointer's `source_revision`
   * means "unchanged": the engine neither fetches nor writes.
   */
  readonly revision: string;
  /**
   * When the source last changed this prompt as far as the listing shows (ISO-8601), if it knows: lets a
   * sync skip a prompt that a sync started after that time is already reading (see sync/claims.ts).
   */
  readonly changedAt?: string;
  /**
   * The revision alone cannot prove this prompt unchanged (e.g. a deleted version leaves the listing as it
   * was): the engine fetches it anyway, passing what the pointer knows, so the source can answer `unchanged`.
   */
  readonly verify?: boolean;
}

/** One prompt as the source holds it. */
export interface SourcePrompt {
  readonly id: string;
  /** Content to serve (see schema.PromptContent); validated and checksummed by the engine. */
  readonly content: PromptContent;
  /** The source's own version label (`"3"`, `"DRAFT"`, a file checksum…), stored as `source_version`. */
  readonly sourceVersion: string;
  /** Revision token to remember on the pointer (see SourceSummary.revision). */
  readonly revision: string;
  /**
   * When the source last changed this prompt (ISO-8601), if the source knows; stored as `source_updated_at`
   * for operators. Racing syncs are ordered by when they read the source (`source_read_at`), not by this.
   */
  readonly updatedAt?: string;
}

/** What the engine already knows about a prompt from its pointer (passed to `fetch`). */
export interface KnownPrompt {
  readonly sourceVersion?: string;
  readonly sourceRevision?: string;
}

/** Outcome of fetching one prompt. */
export type FetchResult =
  | { readonly kind: 'prompt'; readonly prompt: SourcePrompt }
  /** The source confirmed nothing changed (e.g. listed versions show the same latest version). */
  | { readonly kind: 'unchanged'; readonly revision: string }
  /** The prompt does not exist (or has nothing to serve, e.g. no numbered version yet). */
  | { readonly kind: 'not-found'; readonly reason?: string };

/** A prompt the source could not read or parse; reported, never fatal to the rest of the sync. */
export interface SourceFailure {
  readonly id: string;
  readonly reason: string;
}

export interface SourceListing {
  readonly prompts: SourceSummary[];
  /** Entries that could not even be listed (e.g. an unparseable file); their ids are kept, not deleted. */
  readonly failures: SourceFailure[];
}

export interface SourceStats {
  /** Calls made to the source, by operation name (`ListPrompts`, `GetPrompt`, `ReadFile`…). */
  readonly calls: Record<string, number>;
  /** Throttling responses received from the source (each was retried). */
  readonly throttles: number;
}

export interface PromptSourceReader {
  /** Stored as `source` on every item: `bedrock`, `directory`, … */
  readonly name: string;
  /** Every prompt the source serves. Throws only if the listing as a whole failed. */
  list(): Promise<SourceListing>;
  /**
   * Reads one prompt. `summary` is its listing entry when the engine has one (a full sync) and
   * `undefined` for a targeted sync of one id; `known` is what the pointer holds. Throws a
   * SourceReadError for a prompt that exists but cannot be read or converted.
   */
  fetch(id: string, summary: SourceSummary | undefined, known: KnownPrompt | undefined): Promise<FetchResult>;
  /** Counters since the reader was created. */
  stats(): SourceStats;
}

