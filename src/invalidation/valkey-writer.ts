/**
 * The invalidation function's side of the Valkey adapter: the two scripts of the L2 wire contract
 * (src/schema/l2.ts). Kept out of the runtime's adapter, so no reader bundle carries the scripts.
 */
import type { L2Writer } from './write-through';
import { ValkeyL2 } from '../runtime/valkey';
import { epochStart, L2_EPOCH_BUMP_SCRIPT, L2_WRITE_THROUGH_SCRIPT } from '../schema/l2';

export class ValkeyWriter extends ValkeyL2 implements L2Writer {
  /** The ordered write-through script: 1 written, 0 kept (the stored token is equal or newer). */
  writeThroughValue(key: string, inc: string, seq: string, value: string, ttlSeconds: number): Promise<number> {
    return this.script(L2_WRITE_THROUGH_SCRIPT, [key], [inc, seq, value, String(ttlSeconds)]);
  }

  /**
   * Moves the epoch (healing any garbage) to `<counter + 1> <incarnation>`; returns the counter. An absent or garbage
   * epoch starts again at a random counter, so a re-created epoch never repeats a value a reader has seen.
   */
  bumpEpoch(key: string, inc: string, latestInc: string): Promise<number> {
    return this.script(L2_EPOCH_BUMP_SCRIPT, [key], [inc, latestInc, epochStart()]);
  }
}
