/**
 * The per-prompt step of a sync: given what the source holds for one prompt and the pointer read, decides and
 * performs the one write (if any) that brings the pointer in line: a new version, a deletion mark, the source's
 * bookkeeping, or nothing. Governance's part (audit, gate, label flags) goes through the engine's policy.
 */
import {
  Attr,
  MAX_VERSION_NUMBER,
  PromptContent,
  STATUS_ACTIVE,
  STATUS_DELETED,
  checksum,
} from '../schema';
import type { SyncPolicy } from './governance-policy';
import { StepResult, isOlder } from './outcome';
import type { FetchResult, SourcePrompt } from './source';
import { pointerItem, sizeProblem, versionItem } from '../write/content';
import type { PointerState, ServingTableStore } from '../write/store';

export class PromptWriter {
  /** Ids whose next version number must come from the history (a version item was found in the way). */
  private readonly versionLookups = new Set<string>();

  constructor(
    private readonly store: ServingTableStore,
    private readonly sourceName: string,
    private readonly policy: SyncPolicy,
    private readonly now: () => Date,
  ) {}

  /**
   * Decides and performs the one write (if any) that brings `pointer` in line with what the source held at
   * `readAt`. A sync that read the source before the pointer's last writer did never overwrites it.
   */
  async apply(id: string, fetched: FetchResult, readAt: string, pointer: PointerState | undefined): Promise<StepResult> {
    if (isOlder(readAt, pointer?.sourceReadAt)) return { kind: 'unchanged' };
    const broken = pointer !== undefined && pointer.problems.length > 0;
    if (fetched.kind === 'not-found') {
      if (!pointer || (pointer.status !== STATUS_ACTIVE && !broken)) {
        // Already DELETED: its labels are brought in line again (a sync cut short after the pointer's write left some
        // without `source_deleted_at`); labels already flagged cost nothing but the Query.
        if (pointer?.status === STATUS_DELETED) await this.policy.flagLabels(id, this.timestamp());
        return { kind: 'skipped', reason: fetched.reason ?? 'not found at the source' };
      }
      const at = this.timestamp();
      const audit = this.policy.audit(id, { fromVersion: pointer.versionNumber || undefined, reason: 'deleted at the source', at });
      if ((await this.store.markDeleted(pointer, at, readAt, audit.writes)) !== 'written') return 'conflict';
      audit.committed();
      // Labels keep serving what they copy, visibly: `source_deleted_at` on each.
      await this.policy.flagLabels(id, at);
      return { kind: 'deleted' };
    }
    if (fetched.kind === 'unchanged') {
      if (broken) throw new Error(`the source answered "unchanged" for a pointer that must be rewritten (${pointer!.problems.join('; ')})`);
      if (!pointer || pointer.status !== STATUS_ACTIVE || pointer.sourceRevision === fetched.revision) return { kind: 'unchanged' };
      const outcome = await this.store.updateSourceMetadata(pointer, readAt, { [Attr.sourceRevision]: fetched.revision });
      return outcome === 'written' ? { kind: 'unchanged' } : 'conflict';
    }
    const prompt = fetched.prompt;
    const sum = checksum(prompt.content);
    if (!broken && pointer?.status === STATUS_ACTIVE && (sum === pointer.sourceChecksum || sum === pointer.checksum)) {
      // The source's content has not changed since the last sync, or is already what is served: keep what
      // is served (this is what leaves an operator's rollback in place) and only note the source's revision.
      if (sum === pointer.sourceChecksum && prompt.revision === pointer.sourceRevision) return { kind: 'unchanged' };
      const outcome = await this.store.updateSourceMetadata(pointer, readAt, {
        [Attr.sourceChecksum]: sum,
        [Attr.sourceRevision]: prompt.revision,
        [Attr.sourceVersion]: prompt.sourceVersion,
        [Attr.sourceUpdatedAt]: prompt.updatedAt,
      });
      return outcome === 'written' ? { kind: 'unchanged' } : 'conflict';
    }
    return this.writeNewVersion(id, prompt, sum, readAt, pointer);
  }

  private async writeNewVersion(
    id: string, prompt: SourcePrompt, sum: string, readAt: string, pointer: PointerState | undefined,
  ): Promise<StepResult> {
    let latest = pointer?.latestVersionNumber ?? 0;
    const broken = pointer !== undefined && pointer.problems.length > 0;
    if (broken || latest >= MAX_VERSION_NUMBER) {
      // A repair, or numbers with no successor: the pointer's numbers are not believed, the history is. Every
      // number the sync puts on a pointer is written in the same transaction as its version item, so a number
      // above the highest version item was written by hand (`version_number 999999`) and is not continued.
      latest = await this.store.highestVersionNumber(id);
    } else if (this.versionLookups.has(id)) {
      // A version item was in the way: the pointer is behind its history.
      latest = Math.max(latest, await this.store.highestVersionNumber(id));
    }
    if (latest >= MAX_VERSION_NUMBER) {
      // A version item at the last number (made by hand): continue the history below the items at the top.
      const below = await this.store.highestBelowTopRun(id);
      if (below === undefined) {
        return { kind: 'failed', reason: `every version number up to ${MAX_VERSION_NUMBER} is used by a version item; no new version can be written`, retryable: false };
      }
      latest = below;
    }
    const versionNumber = latest + 1;
    // Every move of an existing pointer is gated: a change of an ACTIVE prompt, a prompt back at the source after
    // a delete (DELETED pointer, new version), and the repair of a broken pointer. Only a first write is not.
    if (pointer !== undefined) {
      const decided = await this.policy.gateMove({ id, prompt, sum, readAt, pointer, latest, versionLookups: this.versionLookups });
      if (decided !== undefined) return decided;
    }
    const meta = {
      versionNumber,
      checksum: sum,
      source: this.sourceName,
      sourceVersion: prompt.sourceVersion,
      sourceUpdatedAt: prompt.updatedAt,
      syncedAt: this.timestamp(),
    };
    const content: PromptContent = prompt.content;
    const version = versionItem(id, content, meta);
    const current = pointerItem(id, content, {
      ...meta, latestVersionNumber: versionNumber, sourceChecksum: sum, sourceRevision: prompt.revision, sourceReadAt: readAt,
    });
    const tooBig = sizeProblem(current);
    if (tooBig) return { kind: 'failed', reason: tooBig, retryable: false };
    const audit = this.policy.audit(id, {
      fromVersion: pointer && pointer.versionNumber > 0 ? pointer.versionNumber : undefined,
      toVersion: versionNumber,
      reason: `${!pointer ? 'new prompt' : pointer.status === STATUS_DELETED ? 'back at the source' : 'changed at the source'} (source version ${prompt.sourceVersion})`,
      at: meta.syncedAt,
    });
    const outcome = await this.store.writeVersion(version, current, pointer, readAt, audit.writes);
    if (outcome === 'version-exists') {
      this.versionLookups.add(id);
      return 'conflict';
    }
    this.versionLookups.delete(id);
    if (outcome !== 'written') return 'conflict';
    audit.committed();
    if (pointer?.status === STATUS_DELETED) await this.policy.flagLabels(id, undefined);
    return { kind: 'written', membership: pointer?.status !== STATUS_ACTIVE };
  }

  private timestamp(): string {
    return this.now().toISOString();
  }
}
