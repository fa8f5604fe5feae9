/**
 * An in-memory source of truth for engine tests that need to change the source mid-sync (races).
 * Bedrock itself is exercised through the stand-in; this double only stands in for "some source".
 */
import { createHash } from 'node:crypto';
import { PromptContent } from '../../src/schema';
import { FetchResult, PromptSourceReader, SourceListing, SourceStats } from '../../src/sync/source';

export class MemorySource implements PromptSourceReader {
  readonly name = 'memory';
  private readonly prompts = new Map<string, { content: PromptContent; rev: number }>();
  /** Last revision per id, kept across deletion so a re-created prompt continues the sequence. */
  private readonly revs = new Map<string, number>();
  private readonly calls: Record<string, number> = {};
  /** Called before each fetch returns (lets a test delay or interleave reads). */
  beforeFetchReturns?: (id: string) => Promise<void>;

  set(id: string, content: PromptContent): void {
    const rev = (this.revs.get(id) ?? 0) + 1;
    this.revs.set(id, rev);
    this.prompts.set(id, { content, rev });
  }

  delete(id: string): void {
    this.prompts.delete(id);
  }

  /** The latest revision of `id`, deleted or not. */
  rev(id: string): number | undefined {
    return this.revs.get(id);
  }

  has(id: string): boolean {
    return this.prompts.has(id);
  }

  async list(): Promise<SourceListing> {
    this.count('List');
    return { prompts: [...this.prompts].map(([id, p]) => ({ id, revision: revision(p.content) })), failures: [] };
  }

  async fetch(id: string): Promise<FetchResult> {
    this.count('Get');
    const p = this.prompts.get(id);
    const snapshot = p && { ...p, content: structuredClone(p.content) };
    if (this.beforeFetchReturns) await this.beforeFetchReturns(id);
    if (!snapshot) return { kind: 'not-found' };
    return { kind: 'prompt', prompt: { id, content: snapshot.content, sourceVersion: String(snapshot.rev), revision: revision(snapshot.content) } };
  }

  stats(): SourceStats {
    return { calls: { ...this.calls }, throttles: 0 };
  }

  private count(op: string): void {
    this.calls[op] = (this.calls[op] ?? 0) + 1;
  }
}

function revision(content: PromptContent): string {
  return createHash('sha256').update(JSON.stringify(content)).digest('hex');
}

export function textPrompt(text: string, extra: Partial<PromptContent> = {}): PromptContent {
  return { template_type: 'TEXT', text, input_variables: [], ...extra };
}
