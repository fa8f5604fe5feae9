/**
 * A size-bounded map that evicts the least recently used key, tuned for read-mostly hot paths.
 *
 * A `Map` iterates in insertion order, so re-inserting a key on use keeps the oldest key first. Doing that on
 * every hit costs a delete and a set; instead a hit re-inserts only keys that have drifted into the older half
 * (more than `maxEntries / 2` insertions ago). A hot key therefore costs one `Map.get` per hit, and any key used
 * at least once every `maxEntries / 2` insertions is never evicted.
 */
export class Lru<V> {
  private readonly map = new Map<string, { value: V; stamp: number }>();
  private declare readonly maxEntries: number;
  private declare readonly onRemove: (value: V) => void;
  private declare readonly promoteAfter: number;
  private clock = 0;
  private evicted = 0;

  /** `onRemove` is called with every value that leaves: evicted, deleted or replaced. */
  constructor(maxEntries: number, onRemove: (value: V) => void = () => undefined) {
    this.maxEntries = maxEntries;
    this.onRemove = onRemove;
    this.promoteAfter = Math.floor(maxEntries / 2);
  }

  /** Entries held. */
  get size(): number {
    return this.map.size;
  }

  /** Keys evicted by the size bound so far. */
  get evictions(): number {
    return this.evicted;
  }

  get(key: string): V | undefined {
    const node = this.map.get(key);
    if (node === undefined) return undefined;
    if (this.clock - node.stamp > this.promoteAfter) {
      this.map.delete(key);
      this.map.set(key, node);
      node.stamp = ++this.clock;
    }
    return node.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    this.map.set(key, { value, stamp: ++this.clock });
    if (this.map.size > this.maxEntries) {
      this.delete(this.map.keys().next().value!);
      this.evicted++;
    }
  }

  /** Every value, oldest first, without marking any as used. */
  *values(): IterableIterator<V> {
    for (const node of this.map.values()) yield node.value;
  }

  /** Removes every entry (`onRemove` is called for each). */
  clear(): void {
    for (const key of [...this.map.keys()]) this.delete(key);
  }

  delete(key: string): void {
    const node = this.map.get(key);
    if (node === undefined) return;
    this.map.delete(key);
    this.onRemove(node.value);
  }
}
