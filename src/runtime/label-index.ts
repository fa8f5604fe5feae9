/**
 * The label entries of one read path, by label and id, so a labeled hit builds no key string; and the labels answered
 * not found, so `invalidate(id)` forgets those answers too. Part of the `labels` feature (label-feature.ts): a reader
 * that never reads a label bundles none of it.
 */
import type { Entry } from './entry';
import { labelCacheKey } from './labels';
import type { Lru } from './lru';

export class LabelIndex {
  private readonly labeled = new Map<string, Map<string, Entry>>();
  /** The label last read and its map of `labeled` (dropped with that map), so a hit of the usual label skips one lookup. */
  private declare lastLabel: string | undefined;
  private declare lastById: Map<string, Entry> | undefined;
  /** Labels answered not found (bounded by `maxEntries`). */
  private readonly asked = new Set<string>();

  private declare readonly prompts: Lru<Entry>;
  private declare readonly notFound: Lru<number>;
  private declare readonly maxEntries: number;

  constructor(prompts: Lru<Entry>, notFound: Lru<number>, maxEntries: number) {
    this.prompts = prompts;
    this.notFound = notFound;
    this.maxEntries = maxEntries;
  }

  /** A label's entry; marked used for the size bound on every 16th lookup (a hot label keeps its place for less). */
  get(label: string, promptId: string): Entry | undefined {
    // Most processes read one label: its id map is kept at hand, so a hit costs one Map lookup, as a CURRENT hit does.
    let byId = this.lastLabel === label ? this.lastById : undefined;
    if (byId === undefined) {
      byId = this.labeled.get(label);
      if (byId !== undefined) {
        this.lastLabel = label;
        this.lastById = byId;
      }
    }
    const entry = byId?.get(promptId);
    if (entry !== undefined && entry.labelHits++ % 16 === 0) this.prompts.get(entry.key);
    return entry;
  }

  /** A label's entry, not marked used (preload's freshness check). */
  peek(label: string, promptId: string): Entry | undefined {
    return this.labeled.get(label)?.get(promptId);
  }

  add(entry: Entry): void {
    const { label, promptId } = entry.target;
    const byId = this.labeled.get(label!) ?? new Map<string, Entry>();
    this.labeled.set(label!, byId.set(promptId, entry));
  }

  /** Called for every label entry that leaves the read path's memory. */
  remove(entry: Entry): void {
    const { label, promptId } = entry.target;
    const byId = this.labeled.get(label!);
    if (byId?.get(promptId) !== entry) return;
    byId.delete(promptId);
    if (byId.size === 0) {
      this.labeled.delete(label!);
      if (this.lastById === byId) this.lastLabel = this.lastById = undefined;
    }
  }

  /** A label was answered not found. */
  notFoundFor(label: string): void {
    if (this.asked.size < this.maxEntries) this.asked.add(label);
  }

  /** Forgets one prompt's label entries and not-found answers. */
  forget(promptId: string): void {
    for (const byId of [...this.labeled.values()]) {
      const entry = byId.get(promptId);
      if (entry !== undefined) this.prompts.delete(entry.key);
    }
    for (const label of this.asked) this.notFound.delete(labelCacheKey(label, promptId));
  }
}
