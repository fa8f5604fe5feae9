/**
 * The pointer an activation writes: the activated version's content and identity, the replaced pointer's
 * sync bookkeeping. Pure: no I/O.
 *
 * Keeping `latest_version_number`, `source_checksum`, `source_revision`, `source_read_at` and `source` from the
 * replaced pointer is what makes a rollback interact correctly with the sync (see `SyncEngine.apply`):
 * - a sync that finds the source unchanged matches `source_revision`/`source_checksum` and leaves it in place;
 * - a real source change differs from both checksums and is written as version `latest_version_number + 1`;
 * - a sync that read the source before the replaced pointer's sync still loses on `source_read_at`, and one
 *   that read it after is not mistaken for a stale one (an activation is not a source read).
 */
import { Attr, PromptContent, contentOf } from '../schema';
import { pointerItem } from './content';
import { PointerState } from './store';
import { Item } from '../schema/ddb-codec';

/** `source_revision` of a pointer that never recorded one: matches no source's revision token. */
const UNKNOWN_SOURCE_REVISION = '';

/** The pointer being replaced, as read for the guarded write. */
export interface ReplacedPointer {
  readonly state: PointerState;
  readonly item: Record<string, unknown>;
}

/** Who activated, and when (ISO-8601; also becomes `synced_at`, the time `CURRENT` was last written). */
export interface ActivationStamp {
  readonly at: string;
  readonly by?: string;
}

/** `CURRENT` as a full copy of `version` (an immutable version item), keeping `replaced`'s sync bookkeeping. */
export function activatedPointerItem(promptId: string, version: Record<string, unknown>, replaced: ReplacedPointer, stamp: ActivationStamp): Item {
  const { state } = replaced;
  const content: PromptContent = contentOf(version);
  return pointerItem(promptId, content, {
    versionNumber: version[Attr.versionNumber] as number,
    checksum: version[Attr.checksum] as string,
    sourceVersion: version[Attr.sourceVersion] as string,
    sourceUpdatedAt: version[Attr.sourceUpdatedAt] as string | undefined,
    source: replaced.item[Attr.source] as string,
    latestVersionNumber: state.latestVersionNumber,
    // Every pointer a sync writes carries both; a hand-made one without them is treated as serving what the
    // source held, at a revision no listing will match (so the next sync compares checksums).
    sourceChecksum: state.sourceChecksum ?? state.checksum ?? String(version[Attr.checksum]),
    sourceRevision: state.sourceRevision ?? UNKNOWN_SOURCE_REVISION,
    sourceReadAt: state.sourceReadAt,
    syncedAt: stamp.at,
    activatedAt: stamp.at,
    activatedBy: stamp.by,
  });
}
