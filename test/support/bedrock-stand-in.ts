/**
 * A local stand-in for the read side of Amazon Bedrock Prompt Management (no emulator exists). It speaks
 * Bedrock Agent's REST-JSON on 127.0.0.1 so the real `@aws-sdk/client-bedrock-agent` can talk to it, with
 * `endpoint: standIn.endpoint` or `AWS_ENDPOINT_URL_BEDROCK_AGENT`:
 *
 * - `GET /prompts/?maxResults=&nextToken=&promptIdentifier=` (ListPrompts): without an identifier the DRAFT
 *   summary of every prompt; with one, that prompt's DRAFT summary and one summary per numbered version.
 * - `GET /prompts/{promptIdentifier}/?promptVersion=` (GetPrompt): the full prompt; DRAFT by default.
 * - Each operation has its own quota (10 requests/second, as in AWS); excess requests get HTTP 429
 *   `ThrottlingException`. Errors carry `x-amzn-errortype` and a JSON `message`, like the service.
 *
 * Tests (and the demo and benchmarks: no jest globals here) drive the model in memory: create prompts,
 * edit drafts, snapshot versions, delete, or make one prompt's GetPrompt answer a broken body.
 */
import { randomInt } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BedrockAgentClient, BedrockAgentClientConfig, PromptVariant } from '@aws-sdk/client-bedrock-agent';
import { BEDROCK_PROMPT_QUOTA_PER_SECOND } from '../../src/schema';

export const STAND_IN_REGION = 'us-east-1';
export const STAND_IN_ACCOUNT = '123456789012';
/** Bedrock keeps at most this many numbered versions of a prompt. */
export const MAX_NUMBERED_VERSIONS = 10;
/** ListPrompts' `maxResults` range is 1..1000. */
export const MAX_LIST_RESULTS = 1000;
/** Page size when `maxResults` is omitted (AWS does not document one; small, so forgotten paging shows). */
export const DEFAULT_LIST_RESULTS = 10;

const PROMPT_ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const PROMPT_ID_LENGTH = 10;
const PROMPT_IDENTIFIER = /^(?:arn:aws:bedrock:[a-z0-9-]{1,20}:\d{12}:prompt\/)?([0-9a-zA-Z]{10})$/;
const NUMBERED_VERSION = /^[1-9]\d{0,4}$/;
const QUOTA_WINDOW_MS = 1000;

export type StandInOperation = 'ListPrompts' | 'GetPrompt';
const OPERATIONS: readonly StandInOperation[] = ['ListPrompts', 'GetPrompt'];

/** A prompt's editable part, in Bedrock's own shapes (as in CreatePrompt / UpdatePrompt). */
export interface PromptDraft {
  readonly name: string;
  readonly description?: string;
  readonly defaultVariant?: string;
  readonly variants: PromptVariant[];
}

export interface BedrockStandInOptions {
  /** Requests per second each operation accepts (sliding one-second window). @default 10, Bedrock's quota */
  readonly requestsPerSecond?: number;
  /**
   * Epoch milliseconds for `createdAt`/`updatedAt`, so tests can order timestamps. The quota window always
   * runs on real time. @default Date.now
   */
  readonly clock?: () => number;
  /** Delay before each response, after the quota check. @default 0 */
  readonly latencyMs?: number;
}

export interface StandInStats {
  /** Requests admitted by the quota, by operation (whatever their answer). */
  readonly served: Record<StandInOperation, number>;
  /** Requests answered 429 ThrottlingException, by operation. */
  readonly throttled: Record<StandInOperation, number>;
}

/** One request as the stand-in saw it. */
export interface StandInRequest {
  /** `performance.now()` when it arrived. */
  readonly at: number;
  readonly operation: StandInOperation;
  /** The prompt named by the path (GetPrompt) or by `promptIdentifier` (ListPrompts), if any. */
  readonly promptId?: string;
  readonly throttled: boolean;
}

interface Snapshot extends PromptDraft {
  readonly createdAt: number;
  readonly updatedAt: number;
}

interface StoredPrompt {
  readonly id: string;
  draft: Snapshot;
  /** Numbered versions; index i holds version i + 1 (`undefined` once deleted: numbers are never reused). */
  readonly versions: (Snapshot | undefined)[];
  /** When set, GetPrompt of any version answers 200 with exactly this body. */
  rawGetPromptBody?: string;
}

/** An error answer in Bedrock's REST-JSON form. */
class ServiceError extends Error {
  constructor(readonly status: number, readonly type: string, message: string) {
    super(message);
  }
}

export class BedrockStandIn {
  private readonly prompts = new Map<string, StoredPrompt>();
  private requestsPerSecond: number;
  private readonly clock: () => number;
  private readonly latencyMs: number;
  /** Real-time (`performance.now()`) stamps of the requests admitted in the last second, per operation. */
  private readonly windows = new Map<StandInOperation, number[]>();
  private counters: StandInStats = emptyStats();
  /** Every request that reached the server (admitted or throttled), oldest first, since start or the last reset. */
  private log: StandInRequest[] = [];
  private server?: http.Server;
  private url?: string;

  constructor(options: BedrockStandInOptions = {}) {
    this.requestsPerSecond = options.requestsPerSecond ?? BEDROCK_PROMPT_QUOTA_PER_SECOND;
    this.clock = options.clock ?? Date.now;
    this.latencyMs = options.latencyMs ?? 0;
  }

  /** `http://127.0.0.1:<port>`, once started. */
  get endpoint(): string {
    if (!this.url) throw new Error('the Bedrock stand-in is not started');
    return this.url;
  }

  /** Listens on a free loopback port; returns the endpoint. */
  async start(): Promise<string> {
    if (this.url) return this.url;
    const server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.url;
  }

  /** Closes the server, dropping kept-alive connections. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.url = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  }

  /** A real Bedrock Agent client pointed at the stand-in (fake credentials, no IMDS probing). */
  client(config: BedrockAgentClientConfig = {}): BedrockAgentClient {
    return new BedrockAgentClient({
      endpoint: this.endpoint,
      region: STAND_IN_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      ...config,
    });
  }

  /** Creates a prompt (its DRAFT only, like CreatePrompt) and returns its 10-character id. */
  createPrompt(draft: PromptDraft): string {
    let id: string;
    do {
      id = Array.from({ length: PROMPT_ID_LENGTH }, () => PROMPT_ID_ALPHABET[randomInt(PROMPT_ID_ALPHABET.length)]).join('');
    } while (this.prompts.has(id));
    const now = this.clock();
    this.prompts.set(id, { id, draft: { ...wireCopy(draft), createdAt: now, updatedAt: now }, versions: [] });
    return id;
  }

  /** Replaces the given fields of the DRAFT (like UpdatePrompt) and bumps its `updatedAt`. */
  updateDraft(id: string, patch: Partial<PromptDraft>): void {
    const prompt = this.prompt(id);
    prompt.draft = { ...prompt.draft, ...wireCopy(patch), updatedAt: this.clock() };
  }

  /** Snapshots the DRAFT as the next numbered version (like CreatePromptVersion); returns its number. */
  createVersion(id: string): string {
    const prompt = this.prompt(id);
    if (prompt.versions.filter((v) => v !== undefined).length >= MAX_NUMBERED_VERSIONS) {
      throw new Error(`ServiceQuotaExceededException: prompt ${id} already has ${MAX_NUMBERED_VERSIONS} versions`);
    }
    const now = this.clock();
    prompt.versions.push({ ...wireCopy(prompt.draft), createdAt: now, updatedAt: now });
    return String(prompt.versions.length);
  }

  /** Deletes one numbered version (like DeletePrompt with a `promptVersion`); its number is never reused. */
  deleteVersion(id: string, version: string): void {
    const prompt = this.prompt(id);
    if (prompt.versions[Number(version) - 1] === undefined) throw new Error(`the Bedrock stand-in has no version ${version} of ${id}`);
    prompt.versions[Number(version) - 1] = undefined;
  }

  /** Deletes a prompt with all its versions (like DeletePrompt). */
  deletePrompt(id: string): void {
    this.prompt(id);
    this.prompts.delete(id);
  }

  /** Makes GetPrompt of `id` answer 200 with exactly `body` (malformed, oversized…); `undefined` restores it. */
  setRawGetPromptBody(id: string, body: string | undefined): void {
    this.prompt(id).rawGetPromptBody = body;
  }

  /** Changes the quota (requests per second, per operation) from now on. */
  setRequestsPerSecond(requestsPerSecond: number): void {
    this.requestsPerSecond = requestsPerSecond;
  }

  /** Requests served and throttled per operation since start or the last {@link reset}. */
  stats(): StandInStats {
    return { served: { ...this.counters.served }, throttled: { ...this.counters.throttled } };
  }

  /** Clears the counters, the request log and the quota windows; prompts are kept. */
  reset(): void {
    this.counters = emptyStats();
    this.windows.clear();
    this.log = [];
  }

  /** Every request since start or the last {@link reset}, oldest first. */
  requests(): readonly StandInRequest[] {
    return [...this.log];
  }

  /** The most requests (all operations together, throttled ones included) that arrived within any one second. */
  peakRequestsPerSecond(): number {
    let peak = 0;
    let start = 0;
    for (let end = 0; end < this.log.length; end++) {
      while (this.log[end].at - this.log[start].at >= QUOTA_WINDOW_MS) start++;
      peak = Math.max(peak, end - start + 1);
    }
    return peak;
  }

  private prompt(id: string): StoredPrompt {
    const prompt = this.prompts.get(id);
    if (!prompt) throw new Error(`the Bedrock stand-in has no prompt ${id}`);
    return prompt;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let status = 200;
    let body: string;
    let errorType: string | undefined;
    try {
      const url = new URL(req.url ?? '/', 'http://stand-in');
      const route = req.method === 'GET' ? /^\/prompts\/(?:([^/]+)\/?)?$/.exec(url.pathname) : null;
      if (!route) throw new ServiceError(404, 'UnknownOperationException', `no operation for ${req.method} ${url.pathname}`);
      const operation: StandInOperation = route[1] === undefined ? 'ListPrompts' : 'GetPrompt';
      const named = route[1] === undefined ? url.searchParams.get('promptIdentifier') ?? undefined : decodeURIComponent(route[1]);
      const admitted = this.admit(operation);
      this.log.push({ at: performance.now(), operation, promptId: named && PROMPT_IDENTIFIER.exec(named)?.[1], throttled: !admitted });
      if (!admitted) {
        this.counters.throttled[operation]++;
        throw new ServiceError(429, 'ThrottlingException', `Rate exceeded for ${operation}`);
      }
      this.counters.served[operation]++;
      body = operation === 'ListPrompts'
        ? this.listPrompts(url.searchParams)
        : this.getPrompt(decodeURIComponent(route[1]), url.searchParams.get('promptVersion'));
    } catch (err) {
      const error = err instanceof ServiceError ? err : new ServiceError(500, 'InternalServerException', String(err));
      status = error.status;
      errorType = error.type;
      body = JSON.stringify({ message: error.message });
    }
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'x-amzn-requestid': `stand-in-${randomInt(1e9)}`,
      ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
    });
    res.end(body);
  }

  /** Sliding one-second window per operation: admits a request if fewer than the quota were admitted. */
  private admit(operation: StandInOperation): boolean {
    const now = performance.now();
    const window = this.windows.get(operation) ?? [];
    this.windows.set(operation, window);
    while (window.length > 0 && window[0] <= now - QUOTA_WINDOW_MS) window.shift();
    if (window.length >= this.requestsPerSecond) return false;
    window.push(now);
    return true;
  }

  private listPrompts(query: URLSearchParams): string {
    const maxResults = Number(query.get('maxResults') ?? DEFAULT_LIST_RESULTS);
    if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > MAX_LIST_RESULTS) {
      throw new ServiceError(400, 'ValidationException', `maxResults must be from 1 to ${MAX_LIST_RESULTS}`);
    }
    const identifier = query.get('promptIdentifier');
    const summaries = identifier === null
      ? [...this.prompts.values()].map((p) => summary(p.id, 'DRAFT', p.draft))
      : this.versionSummaries(this.resolve(identifier));
    const offset = decodeToken(query.get('nextToken'));
    const end = offset + maxResults;
    return JSON.stringify({
      promptSummaries: summaries.slice(offset, end),
      nextToken: end < summaries.length ? encodeToken(end) : undefined,
    });
  }

  private versionSummaries(prompt: StoredPrompt): object[] {
    return [
      summary(prompt.id, 'DRAFT', prompt.draft),
      ...prompt.versions.flatMap((v, i) => (v ? [summary(prompt.id, String(i + 1), v)] : [])),
    ];
  }

  private getPrompt(identifier: string, version: string | null): string {
    const prompt = this.resolve(identifier);
    if (prompt.rawGetPromptBody !== undefined) return prompt.rawGetPromptBody;
    const label = version ?? 'DRAFT';
    let snapshot: Snapshot | undefined;
    if (label === 'DRAFT') {
      snapshot = prompt.draft;
    } else if (NUMBERED_VERSION.test(label)) {
      snapshot = prompt.versions[Number(label) - 1];
    } else {
      throw new ServiceError(400, 'ValidationException', `invalid promptVersion ${label}`);
    }
    if (!snapshot) throw new ServiceError(404, 'ResourceNotFoundException', `prompt ${prompt.id} has no version ${label}`);
    return JSON.stringify({
      ...summary(prompt.id, label, snapshot),
      defaultVariant: snapshot.defaultVariant,
      variants: snapshot.variants,
    });
  }

  private resolve(identifier: string): StoredPrompt {
    const m = PROMPT_IDENTIFIER.exec(identifier);
    if (!m) throw new ServiceError(400, 'ValidationException', `invalid promptIdentifier ${identifier}`);
    const prompt = this.prompts.get(m[1]);
    if (!prompt) throw new ServiceError(404, 'ResourceNotFoundException', `prompt ${m[1]} not found`);
    return prompt;
  }
}

/** A PromptSummary (also the common head of a GetPrompt answer); timestamps ISO-8601 with milliseconds. */
function summary(id: string, version: string, s: Snapshot): Record<string, unknown> {
  const arn = `arn:aws:bedrock:${STAND_IN_REGION}:${STAND_IN_ACCOUNT}:prompt/${id}`;
  return {
    id,
    arn: version === 'DRAFT' ? arn : `${arn}:${version}`,
    name: s.name,
    description: s.description,
    version,
    createdAt: new Date(s.createdAt).toISOString(),
    updatedAt: new Date(s.updatedAt).toISOString(),
  };
}

/** A deep copy holding only what JSON carries (what the real service would have stored). */
function wireCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value));
}

function encodeToken(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString('base64url');
}

function decodeToken(token: string | null): number {
  if (token === null) return 0;
  const m = /^offset:(\d+)$/.exec(Buffer.from(token, 'base64url').toString());
  if (!m) throw new ServiceError(400, 'ValidationException', 'invalid nextToken');
  return Number(m[1]);
}

function emptyStats(): StandInStats {
  const zero = () => Object.fromEntries(OPERATIONS.map((op) => [op, 0])) as Record<StandInOperation, number>;
  return { served: zero(), throttled: zero() };
}
