/**
 * Reads prompts from Amazon Bedrock Prompt Management for the sync engine.
 *
 * `GetPrompt` and `ListPrompts` are each capped at 10 requests/second per account and Region, shared
 * with every other caller in the account. The reader paces all its calls together to
 * `maxRequestsPerSecond` (default: half of one operation's quota), retries throttled calls with jittered
 * exponential backoff, and avoids calls altogether where the listing proves nothing changed. What a GetPrompt
 * answer becomes (the served variant as content) is `bedrock-content.ts`.
 */
import {
  BedrockAgentClient,
  GetPromptCommand,
  GetPromptCommandOutput,
  ListPromptsCommand,
  ListPromptsCommandInput,
  PromptSummary,
} from '@aws-sdk/client-bedrock-agent';
import type { FinalizeRequestMiddleware, Pluggable } from '@smithy/types';
import { BEDROCK_PROMPT_ID, DEFAULT_SOURCE_REQUESTS_PER_SECOND } from '../../schema';
import { isThrottling, isTransient } from '../../schema/retryable';
import { RateLimiter, retryWithBackoff } from '../../write/pacer';
import type { CallLimiter } from '../../write/shared-budget';
import { SourceReadError } from '../errors';
import { toSourcePrompt } from './bedrock-content';
import {
  FetchResult,
  KnownPrompt,
  PromptSourceReader,
  SourceFailure,
  SourceListing,
  SourceStats,
  SourceSummary,
} from '../source';

/** Default attempts per call, the first included, when Bedrock answers `ThrottlingException`. */
export const DEFAULT_MAX_ATTEMPTS = 8;
/**
 * Prompts a `LATEST`-mode full sync re-checks although their listing looks unchanged: a deleted numbered
 * version leaves the draft's `updatedAt` (all the listing shows) as it was. One ListPrompts each.
 */
export const DEFAULT_LATEST_CHECKS_PER_SYNC = 20;
/** Largest `maxResults` ListPrompts accepts. */
export const LIST_PROMPTS_PAGE_SIZE = 1000;

/** Bedrock's name of a prompt's working draft. */
const DRAFT = 'DRAFT';
/** Bedrock's numbered versions: "1" to "99999". */
const NUMBERED_VERSION = /^[1-9]\d{0,4}$/;
/** Suffix of a LATEST-mode revision whose served version lags the draft (see {@link BedrockPromptSource}). */
const PENDING_SUFFIX = ':pending';

/** Which version of each prompt to serve. */
export type BedrockVersionSelection = 'LATEST' | 'DRAFT';

export interface BedrockPromptSourceOptions {
  /** The client to call Bedrock with. Prefer `maxAttempts: 1`: this reader does the retrying. */
  readonly client: BedrockAgentClient;
  /**
   * Sync only these prompt ids (ListPrompts per id, so IAM can be scoped to their ARNs).
   * @default every prompt in the account and Region
   */
  readonly promptIds?: string[];
  /** `LATEST`: the highest numbered version; `DRAFT`: the working draft. @default 'LATEST' */
  readonly version?: BedrockVersionSelection;
  /** Pace of all calls together (ListPrompts and GetPrompt). @default DEFAULT_SOURCE_REQUESTS_PER_SECOND (schema.ts: half the quota) */
  readonly maxRequestsPerSecond?: number;
  /** Attempts per call when throttled, the first included. @default DEFAULT_MAX_ATTEMPTS */
  readonly maxAttempts?: number;
  /**
   * What paces the calls instead of this reader's own token bucket at `maxRequestsPerSecond`: e.g. the
   * table's shared budget (sync/shared-budget.ts), so concurrent syncs together stay within it.
   * @default - a token bucket of this reader alone
   */
  readonly limiter?: CallLimiter;
  /**
   * `LATEST` mode: how many listed prompts each full listing marks for a re-check of their versions (chosen at
   * random, so every prompt is re-checked within about `prompts / latestChecksPerSync` reconciles; the
   * CloudTrail event of the deletion syncs it at once). @default DEFAULT_LATEST_CHECKS_PER_SYNC
   */
  readonly latestChecksPerSync?: number;
  /** Source of randomness in [0, 1) for choosing those prompts. @default Math.random */
  readonly random?: () => number;
}

type Operation = 'ListPrompts' | 'GetPrompt';

/**
 * A {@link PromptSourceReader} over Bedrock Prompt Management.
 *
 * **Revisions.** The engine skips a prompt without any call when the listing's revision equals the one
 * stored on its pointer, so the revision must change whenever the served content may have.
 * - `DRAFT` mode: `draft:<draft updatedAt>`; every edit of the draft bumps `updatedAt`.
 * - `LATEST` mode: the listing shows only the draft's `updatedAt`, and CreatePromptVersion snapshots the
 *   draft without changing it, so the listing alone cannot reveal a new numbered version. The listing
 *   revision is `latest:<draft updatedAt>`; `fetch` lists the prompt's versions (one ListPrompts call) and:
 *   - if the highest version was created at or after the draft's last edit, that version holds the
 *     draft's content: it is "caught up" and the stored revision is `latest:<draft updatedAt>`. Any
 *     later version made without a draft edit has the same content, so skipping until the draft changes
 *     is safe;
 *   - otherwise the draft has edits no version holds yet, and the stored revision is
 *     `latest:<draft updatedAt>:pending`, which never equals a listing revision: each reconcile re-checks
 *     that prompt with one ListPrompts call, and calls GetPrompt only when the highest version number
 *     differs from the pointer's `source_version` (else it answers `unchanged`).
 * - A prompt with no numbered version yet is `not-found` in `LATEST` mode.
 *
 * **Pacing.** Every HTTP attempt, including any retries the SDK client makes itself, waits for the
 * reader's token bucket and is counted; throttled calls are retried after a jittered backoff.
 */
export class BedrockPromptSource implements PromptSourceReader {
  readonly name = 'bedrock';
  private readonly client: BedrockAgentClient;
  private readonly promptIds?: readonly string[];
  private readonly selection: BedrockVersionSelection;
  private readonly maxAttempts: number;
  private readonly limiter: CallLimiter;
  private readonly latestChecksPerSync: number;
  private readonly random: () => number;
  private readonly calls: Record<Operation, number> = { ListPrompts: 0, GetPrompt: 0 };
  private throttles = 0;

  constructor(options: BedrockPromptSourceOptions) {
    const { version = 'LATEST', promptIds } = options;
    if (version !== 'LATEST' && version !== DRAFT) {
      throw new RangeError(`version must be 'LATEST' or 'DRAFT', got ${String(version)}`);
    }
    const invalid = promptIds?.find((id) => !BEDROCK_PROMPT_ID.test(id));
    if (invalid !== undefined) throw new RangeError(`not a Bedrock prompt id (10 letters or digits): ${invalid}`);
    this.client = options.client;
    this.promptIds = promptIds && [...new Set(promptIds)];
    this.selection = version;
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.latestChecksPerSync = options.latestChecksPerSync ?? DEFAULT_LATEST_CHECKS_PER_SYNC;
    this.random = options.random ?? Math.random;
    this.limiter = options.limiter ?? new RateLimiter({ ratePerSecond: options.maxRequestsPerSecond ?? DEFAULT_SOURCE_REQUESTS_PER_SECOND });
  }

  async list(): Promise<SourceListing> {
    const listing = this.promptIds ? await this.listSelected(this.promptIds) : await this.listAll();
    return this.selection === DRAFT ? listing : { ...listing, prompts: this.markForChecks(listing.prompts) };
  }

  /** The listing with a random sample of `latestChecksPerSync` summaries marked `verify` (partial Fisher-Yates). */
  private markForChecks(prompts: SourceSummary[]): SourceSummary[] {
    const order = prompts.map((_, i) => i);
    const k = Math.min(this.latestChecksPerSync, order.length);
    for (let i = 0; i < k; i++) {
      const j = i + Math.floor(this.random() * (order.length - i));
      [order[i], order[j]] = [order[j], order[i]];
    }
    const marked = new Set(order.slice(0, k));
    return prompts.map((p, i) => (marked.has(i) ? { ...p, verify: true } : p));
  }

  /**
   * `summary` is not needed: in `DRAFT` mode GetPrompt carries its own `updatedAt`, and in `LATEST` mode
   * the version list is read anyway, so a full and a targeted sync do the same calls.
   */
  async fetch(id: string, _summary: SourceSummary | undefined, known: KnownPrompt | undefined): Promise<FetchResult> {
    // Outside the configured ids, a prompt is not served, whatever Bedrock holds (and IAM may deny reading it).
    if (this.promptIds && !this.promptIds.includes(id)) return { kind: 'not-found', reason: 'outside the configured promptIds' };
    try {
      return this.selection === DRAFT ? await this.fetchDraft(id) : await this.fetchLatest(id, known);
    } catch (error) {
      if (error instanceof SourceReadError) throw error;
      throw new SourceReadError(id, `cannot read Bedrock prompt ${id}: ${messageOf(error)}`, {
        cause: error, retryable: isTransient(error),
      });
    }
  }

  stats(): SourceStats {
    return { calls: { ...this.calls }, throttles: this.throttles };
  }

  private async listAll(): Promise<SourceListing> {
    const prompts: SourceSummary[] = [];
    const failures: SourceFailure[] = [];
    for await (const summary of this.listPrompts({})) {
      if (summary.version !== DRAFT || !summary.id) continue;
      if (summary.updatedAt) {
        prompts.push({ id: summary.id, revision: this.listingRevision(summary.updatedAt), changedAt: summary.updatedAt.toISOString() });
      } else {
        failures.push({ id: summary.id, reason: 'ListPrompts gave no updatedAt' });
      }
    }
    return { prompts, failures };
  }

  /** One ListPrompts(promptIdentifier) per id; the listing keeps the order of `ids`. */
  private async listSelected(ids: readonly string[]): Promise<SourceListing> {
    const entries = await Promise.all(ids.map(async (id): Promise<SourceSummary | SourceFailure | undefined> => {
      try {
        const versions = await this.listVersions(id);
        if (!versions) return undefined; // deleted, or never existed: absent from the listing
        const draftUpdatedAt = versions.find((s) => s.version === DRAFT)?.updatedAt;
        return draftUpdatedAt
          ? { id, revision: this.listingRevision(draftUpdatedAt), changedAt: draftUpdatedAt.toISOString() }
          : { id, reason: 'ListPrompts gave no DRAFT updatedAt' };
      } catch (error) {
        return { id, reason: messageOf(error) };
      }
    }));
    return {
      prompts: entries.filter((e): e is SourceSummary => e !== undefined && 'revision' in e),
      failures: entries.filter((e): e is SourceFailure => e !== undefined && 'reason' in e),
    };
  }

  private async fetchDraft(id: string): Promise<FetchResult> {
    const prompt = await this.getPrompt(id, DRAFT);
    if (!prompt) return { kind: 'not-found', reason: 'no such prompt' };
    if (!prompt.updatedAt) throw new SourceReadError(id, `GetPrompt gave no updatedAt for prompt ${id}`);
    return { kind: 'prompt', prompt: { ...toSourcePrompt(id, DRAFT, prompt), revision: this.listingRevision(prompt.updatedAt) } };
  }

  private async fetchLatest(id: string, known: KnownPrompt | undefined): Promise<FetchResult> {
    const versions = await this.listVersions(id);
    if (!versions) return { kind: 'not-found', reason: 'no such prompt' };
    const draftUpdatedAt = versions.find((s) => s.version === DRAFT)?.updatedAt;
    if (!draftUpdatedAt) throw new SourceReadError(id, `ListPrompts gave no DRAFT updatedAt for prompt ${id}`);
    const latest = highestNumberedVersion(versions);
    if (!latest) return { kind: 'not-found', reason: 'no numbered version yet' };

    const caughtUp = latest.createdAt !== undefined && latest.createdAt.getTime() >= draftUpdatedAt.getTime();
    const revision = this.listingRevision(draftUpdatedAt) + (caughtUp ? '' : PENDING_SUFFIX);
    if (known?.sourceVersion === latest.version) return { kind: 'unchanged', revision };

    const prompt = await this.getPrompt(id, latest.version);
    if (!prompt) return { kind: 'not-found', reason: `version ${latest.version} disappeared while syncing` };
    return { kind: 'prompt', prompt: { ...toSourcePrompt(id, latest.version, prompt), revision } };
  }

  /** The revision a listing shows for a prompt whose draft was last updated at `draftUpdatedAt`. */
  private listingRevision(draftUpdatedAt: Date): string {
    return `${this.selection === DRAFT ? 'draft' : 'latest'}:${draftUpdatedAt.toISOString()}`;
  }

  /** Every page of ListPrompts for `input`. */
  private async *listPrompts(input: ListPromptsCommandInput): AsyncGenerator<PromptSummary> {
    let nextToken: string | undefined;
    do {
      const command = new ListPromptsCommand({ ...input, maxResults: LIST_PROMPTS_PAGE_SIZE, nextToken });
      command.middlewareStack.use(this.pacing('ListPrompts'));
      const page = await this.withRetries(() => this.client.send(command));
      yield* page.promptSummaries ?? [];
      nextToken = page.nextToken;
    } while (nextToken);
  }

  /** The DRAFT and numbered-version summaries of one prompt; `undefined` if it does not exist. */
  private async listVersions(id: string): Promise<PromptSummary[] | undefined> {
    const summaries: PromptSummary[] = [];
    try {
      for await (const summary of this.listPrompts({ promptIdentifier: id })) summaries.push(summary);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
    return summaries;
  }

  /** GetPrompt of one version (`DRAFT` or a number); `undefined` if the prompt or version does not exist. */
  private async getPrompt(id: string, version: string): Promise<GetPromptCommandOutput | undefined> {
    const command = new GetPromptCommand({ promptIdentifier: id, promptVersion: version === DRAFT ? undefined : version });
    command.middlewareStack.use(this.pacing('GetPrompt'));
    try {
      return await this.withRetries(() => this.client.send(command));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private withRetries<T>(send: () => Promise<T>): Promise<T> {
    return retryWithBackoff(send, { maxAttempts: this.maxAttempts, isRetryable: isThrottling });
  }

  /**
   * A command plugin that paces and counts every HTTP attempt. It sits inside the SDK's retry loop (just
   * before signing, so a long wait never ages a signature), which makes any retries the SDK client makes
   * on its own paced and counted too.
   */
  private pacing<Input extends object, Output extends object>(operation: Operation): Pluggable<Input, Output> {
    const middleware: FinalizeRequestMiddleware<Input, Output> = (next) => async (args) => {
      await this.limiter.acquire();
      this.calls[operation]++;
      try {
        return await next(args);
      } catch (error) {
        if (isThrottling(error)) this.throttles++;
        throw error;
      }
    };
    return {
      applyToStack: (stack) => stack.addRelativeTo(middleware, {
        name: 'cdkPromptServingPacing',
        relation: 'before',
        toMiddleware: 'httpSigningMiddleware',
      }),
    };
  }
}

/** The summary of a prompt's highest numbered version, if it has one. */
function highestNumberedVersion(summaries: PromptSummary[]): (PromptSummary & { version: string }) | undefined {
  let highest: (PromptSummary & { version: string }) | undefined;
  for (const s of summaries) {
    if (s.version && NUMBERED_VERSION.test(s.version) && (!highest || Number(s.version) > Number(highest.version))) {
      highest = { ...s, version: s.version };
    }
  }
  return highest;
}

function isNotFound(error: unknown): boolean {
  return (error as { name?: unknown } | undefined)?.name === 'ResourceNotFoundException';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
