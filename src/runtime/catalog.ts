/**
 * The Bloom-filter catalog (`#catalog` / `CURRENT`, written by the sync): lets the client answer "no such
 * prompt" for ids that were never synced without any remote call. A filter has no false negatives, so an id
 * it rules out is certainly absent; a false positive (about 1 %) falls through to the table.
 */
import type { Counters } from './stats';
import type { TableItemReader } from './store';
import { bloomMightContain, catalogProblem } from '../schema/catalog';
import { Attr, CATALOG_ID, CURRENT } from '../schema/keys';

interface BloomFilter {
  readonly bytes: Uint8Array;
  readonly bits: number;
  readonly hashes: number;
}

export class Catalog {
  /** `undefined`: no usable catalog (absent, unreadable, malformed): nothing is ruled out. */
  private filter: BloomFilter | undefined;
  /** When the last read finished (epoch ms), successful or not; `undefined` before the first. */
  private readAt: number | undefined;
  private reading: Promise<void> | undefined;
  /** A caller asked for a read after the one under way. */
  private readAgain = false;

  constructor(
    private readonly reader: TableItemReader,
    private readonly maxAgeMs: number,
    private readonly counters: Counters,
  ) {}

  /**
   * `false` only if the catalog proves `id` absent. Waits for the first read. Past `maxAgeMs`, an id the old
   * filter admits is answered at once while the catalog is re-read in the background; an id the old filter
   * rules out waits for the re-read, so a prompt created since is served within `maxAgeMs`, never later.
   */
  async mightContain(id: string, signal: AbortSignal): Promise<boolean> {
    if (this.readAt === undefined) {
      await this.refresh(signal);
      return this.admits(id);
    }
    if (Date.now() - this.readAt < this.maxAgeMs) return this.admits(id);
    if (this.admits(id)) {
      void this.refresh();
      return true;
    }
    await this.refresh(signal);
    return this.admits(id);
  }

  /**
   * The answer of {@link mightContain} when it needs no wait (a catalog read within `maxAgeMs`, or an older one
   * that admits `id`, re-read in the background); `undefined` when the caller must await `mightContain`. Spares a
   * warm miss two promises.
   */
  verdictNow(id: string): boolean | undefined {
    if (this.readAt === undefined) return undefined;
    if (Date.now() - this.readAt < this.maxAgeMs) return this.admits(id);
    if (!this.admits(id)) return undefined;
    void this.refresh();
    return true;
  }

  private admits(id: string): boolean {
    const filter = this.filter;
    return filter === undefined || bloomMightContain(filter.bytes, filter.bits, filter.hashes, id);
  }

  /**
   * Reads the catalog now (one read at a time; concurrent callers share it). `again`: a read already under way
   * may have started before the change this caller knows of (an epoch move), so one more read follows it.
   * Never rejects.
   */
  refresh(signal?: AbortSignal, again = false): Promise<void> {
    if (this.reading !== undefined) {
      if (!again) return this.reading;
      this.readAgain = true;
      return this.reading.then(() => this.reading ?? undefined);
    }
    this.reading = this.read(signal).finally(() => {
      this.reading = undefined;
      if (this.readAgain) {
        this.readAgain = false;
        void this.refresh();
      }
    });
    return this.reading;
  }

  private async read(signal: AbortSignal | undefined): Promise<void> {
    try {
      this.filter = parseCatalog(await this.reader.getItem(CATALOG_ID, CURRENT, signal));
      this.counters.catalogLoads++;
    } catch {
      // Keep the filter we have (or none): an unreadable catalog must never reject an id. Counted as a store error.
    }
    this.readAt = Date.now();
  }
}

/**
 * The filter of a catalog item; `undefined` when there is no item or it fails the contract's integrity rules
 * (schema `catalogProblem`: types, sizes, bounded hash count, set bits vs count). An unverifiable catalog
 * rules nothing out (fail open), so a broken or hand-edited item never rejects a real prompt; the next sync
 * rebuilds it.
 */
function parseCatalog(item: Record<string, unknown> | undefined): BloomFilter | undefined {
  if (item === undefined) return undefined;
  const fields = {
    bloom: item[Attr.bloom], bits: item[Attr.bloomBits], hashes: item[Attr.bloomHashes], count: item[Attr.count], revision: item[Attr.revision],
  };
  if (catalogProblem(fields) !== undefined) return undefined;
  return { bytes: fields.bloom as Uint8Array, bits: fields.bits as number, hashes: fields.hashes as number };
}
