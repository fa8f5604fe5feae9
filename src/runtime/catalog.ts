/**
 * The Bloom-filter catalog (`#catalog` / `CURRENT`, written by the sync): lets the client answer "no such
 * prompt" for ids that were never synced without any remote call. A filter has no false negatives, so an id
 * it rules out is certainly absent; a false positive (about 1 %) falls through to the table.
 */
import type { Deadline } from './deadline';
import type { Counters } from './stats';
import type { ItemReader } from './store';
import { bloomMightContain, catalogFault } from '../schema/catalog';
import { ATTR_BLOOM, ATTR_BLOOM_BITS, ATTR_BLOOM_HASHES, ATTR_COUNT, ATTR_REVISION, CATALOG_ID, CURRENT } from '../schema/keys';

interface BloomFilter {
  readonly bytes: Uint8Array;
  readonly bits: number;
  readonly hashes: number;
}

export class Catalog {
  // Fields without an initializer are `declare`d (assigned where set): the bundle spells each name once.
  private declare readonly reader: ItemReader;
  private declare readonly maxAgeMs: number;
  private declare readonly counters: Counters;
  /** `undefined`: no usable catalog (absent, unreadable, malformed): nothing is ruled out. */
  private declare filter: BloomFilter | undefined;
  /** When the last read finished (epoch ms), successful or not; `undefined` before the first. */
  private declare readAt: number | undefined;
  private declare reading: Promise<void> | undefined;
  /** A caller asked for a read after the one under way. */
  private readAgain = false;
  /**
   * The filter came from a reader's fill in the L2: a table read up to `maxAgeSeconds` old, of whatever lineage
   * the epoch had then (none, when it was absent or garbage), so it may predate a prompt now in the table. It
   * never rules an id out alone: the table is read first ({@link confirm}).
   */
  private fromFill = false;
  private declare confirming: Promise<boolean> | undefined;

  constructor(reader: ItemReader, maxAgeMs: number, counters: Counters) {
    this.reader = reader;
    this.maxAgeMs = maxAgeMs;
    this.counters = counters;
  }

  /**
   * `false` only if the catalog proves `id` absent. Waits for the first read. Past `maxAgeMs`, an id the old
   * filter admits is answered at once while the catalog is re-read in the background; an id the old filter
   * rules out waits for the re-read, so a prompt created since is served within `maxAgeMs`, never later. A filter
   * from a reader's fill in the L2 rules nothing out alone: the table's catalog is read first.
   */
  async mightContain(id: string, deadline: Deadline): Promise<boolean> {
    if (await this.verdict(id, deadline) || !this.fromFill) return this.admits(id);
    return !await this.confirm(deadline) || this.admits(id);
  }

  private async verdict(id: string, deadline: Deadline): Promise<boolean> {
    if (this.readAt === undefined) {
      await this.refresh(deadline);
      return this.admits(id);
    }
    if (Date.now() - this.readAt < this.maxAgeMs) return this.admits(id);
    if (this.admits(id)) {
      void this.refresh();
      return true;
    }
    await this.refresh(deadline);
    return this.admits(id);
  }

  /**
   * The answer of {@link mightContain} when it needs no wait (a catalog read within `maxAgeMs`, or an older one
   * that admits `id`, re-read in the background); `undefined` when the caller must await `mightContain` (also
   * whenever a filter from a fill rules `id` out). Spares a warm miss two promises.
   */
  verdictNow(id: string): boolean | undefined {
    if (this.readAt === undefined) return undefined;
    if (!this.admits(id)) {
      // A fill never rules an id out alone, and an old filter is re-read first: both wait in mightContain.
      return this.fromFill || Date.now() - this.readAt >= this.maxAgeMs ? undefined : false;
    }
    if (Date.now() - this.readAt < this.maxAgeMs) return true;
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
  refresh(deadline?: Deadline, again = false): Promise<void> {
    if (this.reading !== undefined) {
      if (!again) return this.reading;
      this.readAgain = true;
      return this.reading.then(() => this.reading ?? undefined);
    }
    this.reading = this.read(deadline).then(() => undefined).finally(() => {
      this.reading = undefined;
      if (this.readAgain) {
        this.readAgain = false;
        void this.refresh();
      }
    });
    return this.reading;
  }

  /**
   * A fill ruled an id out: reads the catalog from the table, past the L2 (concurrent callers share the read).
   * `false` when the table could not be read: then nothing is ruled out.
   */
  private confirm(deadline: Deadline): Promise<boolean> {
    this.confirming ??= this.read(deadline, true).finally(() => { this.confirming = undefined; });
    return this.confirming;
  }

  /** `true` when the catalog was read (an absent one included). `fromTable`: past the L2. */
  private async read(deadline: Deadline | undefined, fromTable = false): Promise<boolean> {
    let ok = false;
    try {
      // Through the cache tier when the reader has one (a fleet's cold start reads it from the L2), else the table.
      const loaded = await this.reader.read(CATALOG_ID, CURRENT, deadline ?? this.reader.deadline(), fromTable);
      this.filter = parseCatalog(loaded?.item);
      this.fromFill = loaded?.source === 'fill';
      this.counters.catalogLoads++;
      ok = true;
    } catch {
      // Keep the filter we have (or none): an unreadable catalog must never reject an id. Counted as a store error.
    }
    this.readAt = Date.now();
    return ok;
  }
}

/**
 * The filter of a catalog item; `undefined` when there is no item or it fails the contract's integrity rules
 * (schema `catalogFault`, the rules of `catalogProblem`: types, sizes, bounded hash count, set bits vs count). An unverifiable catalog
 * rules nothing out (fail open), so a broken or hand-edited item never rejects a real prompt; the next sync
 * rebuilds it.
 */
function parseCatalog(item: Record<string, unknown> | undefined): BloomFilter | undefined {
  if (item === undefined) return undefined;
  const fields = {
    bloom: item[ATTR_BLOOM], bits: item[ATTR_BLOOM_BITS], hashes: item[ATTR_BLOOM_HASHES], count: item[ATTR_COUNT], revision: item[ATTR_REVISION],
  };
  if (catalogFault(fields) !== undefined) return undefined;
  return { bytes: fields.bloom as Uint8Array, bits: fields.bits as number, hashes: fields.hashes as number };
}
