/**
 * What the release engine's moves read before they decide, strongly consistent, with the answers for what is not
 * there: a version item, whether the prompt is still served, a label's rollout, and the candidate version a rollout
 * moves readers to (checked against the checksum the rollout started with).
 */
import { ReleaseError, ReleaseErrorCode, labelNotFound, promptDeleted, promptNotFound, rolloutNotFound, versionNotFound } from './errors';
import { parseRolloutItem } from './rollout-items';
import { Attr, LabelAttr, STATUS_DELETED, checksum, contentOf, versionKey } from '../schema';
import { Item, fromItem } from '../schema/ddb-codec';
import type { Rollout } from '../write/label-item';
import type { LabelWrites } from '../write/label-writes';
import type { ServingTableStore } from '../write/store';

export class ReleaseReads {
  constructor(private readonly store: ServingTableStore, private readonly writes: LabelWrites) {}

  /** The label's item and its rollout as read (or why there is none). */
  async readRollout(promptId: string, labelName: string, rolloutId?: string): Promise<{ labelRead: Item; rollout: Rollout }> {
    const labelRead = await this.writes.getLabel(promptId, labelName);
    if (!labelRead) throw labelNotFound(promptId, labelName);
    const parsed = parseRolloutItem(fromItem(labelRead)[LabelAttr.rollout]);
    if (parsed === undefined || (typeof parsed !== 'string' && rolloutId !== undefined && parsed.rolloutId !== rolloutId)) throw rolloutNotFound(promptId, labelName);
    if (typeof parsed === 'string') {
      throw new ReleaseError(ReleaseErrorCode.conflict, `the rollout of label '${labelName}' of prompt '${promptId}' is broken (${parsed}): abort it`);
    }
    return { labelRead, rollout: parsed };
  }

  /** A rollout of a prompt deleted at the source holds (abort still works) until the prompt is back. */
  async requireServed(promptId: string): Promise<void> {
    const pointer = await this.store.getPointer(promptId);
    if (!pointer) throw promptNotFound(promptId);
    if (pointer.status === STATUS_DELETED) throw promptDeleted(promptId);
  }

  /** Version `version`'s item as a plain object, or none. */
  version(promptId: string, version: number): Promise<Record<string, unknown> | undefined> {
    return this.store.getItem(promptId, versionKey(version));
  }

  /**
   * The version item a rollout's share or promotion moves readers to, refused (`Conflict`) unless it is what the
   * rollout started with: its `checksum` and the checksum of its content are `candidate_checksum`. Readers would
   * serve arm A for a mismatch anyway; stepping or promoting it would put other content on the label.
   */
  async candidateOf(promptId: string, label: string, rollout: Rollout): Promise<Record<string, unknown>> {
    const version = await this.version(promptId, rollout.candidateVersion);
    if (!version) throw versionNotFound(promptId, rollout.candidateVersion);
    const stored = version[Attr.checksum];
    let actual: string | undefined;
    try {
      actual = checksum(contentOf(version));
    } catch {
      actual = undefined;
    }
    if (stored !== rollout.candidateChecksum || actual !== rollout.candidateChecksum) {
      throw new ReleaseError(ReleaseErrorCode.conflict, `the rollout of '${label}' of prompt '${promptId}' was started with version ${rollout.candidateVersion} at `
        + `${rollout.candidateChecksum}, but that version item now holds ${typeof stored === 'string' ? stored : 'no checksum'}`
        + `${actual !== stored ? ` (its content hashes to ${actual ?? 'nothing: it is not prompt content'})` : ''}: abort the rollout and start it again`);
    }
    return version;
  }
}
