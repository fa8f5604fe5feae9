/**
 * `preload(prompts, ids)`: warms a client at start-up. A function of the module, not a method of `PromptClient`, so a
 * reader that never preloads bundles none of it (docs/adr/0007-reader-paid-for-by-use.md).
 */
import type { Catalog } from './catalog';
import type { PromptClient } from './client';
import { noLabels } from './client';
import type { Entry } from './entry';
import { PromptNotFoundError } from './errors';
import { PromptCacheL2, withTimeout } from './l2';
import type { LabelFeature } from './label-feature';
import type { ReadPath } from './read-path';
import type { ResolvedOptions } from './resolved-options';
import { currentTarget } from './target';

/**
 * The client's private parts `preload` reads: it is the client's own code, kept out of the class so that a reader that
 * never preloads does not bundle it.
 */
interface ClientParts {
  readonly path: ReadPath;
  readonly labels: LabelFeature | undefined;
  readonly l2: PromptCacheL2 | undefined;
  readonly catalog: Catalog;
  readonly options: ResolvedOptions;
}

/** Options of `preload`. */
export interface PreloadOptions {
  /**
   * Labels to read for every id as well (each label item and, when it has a rollout, its candidate version). Needs a
   * client given the labels feature (`new PromptClient({ features: [labels] })`).
   * @default - no labels: the CURRENT version of each id only
   */
  readonly labels?: readonly string[];
}

/**
 * Reads the catalog, and the CURRENT version of each listed prompt not fresh in the client's memory (joining reads
 * already under way), so the first requests are served from memory. Unknown ids are remembered as not found and do
 * not fail. With `{ labels }`, each id's label items too (and a rollout's candidate version).
 *
 * @throws PromptNotFoundError for an id or a label name that can never be valid
 * @throws PromptStoreError if the table cannot be read for one of the prompts
 * @throws PromptServingError for `labels` with a client not given the labels feature
 * @example
 * import { preload, PromptClient } from 'cdk-prompt-serving/runtime';
 * const prompts = new PromptClient();
 * await preload(prompts, ['support-triage', 'summarize-ticket']); // at init, outside the handler
 * await preload(prompts, ['support-triage'], { labels: ['production'] });
 */
export async function preload(client: PromptClient, promptIds: Iterable<string> = [], options: PreloadOptions = {}): Promise<void> {
  const { path, labels, l2, catalog, options: resolved } = client as unknown as ClientParts;
  if (l2?.ready !== undefined) {
    await withTimeout(() => l2.ready!(), resolved.l2ConnectTimeoutMs).catch(() => undefined);
  }
  const ids = [...promptIds];
  // Every label name is checked before any load starts: a bad one throws with nothing left running unawaited.
  if (options.labels !== undefined && options.labels.length > 0 && labels === undefined) throw noLabels();
  for (const label of options.labels ?? []) {
    const invalid = labels!.invalid(label);
    if (invalid !== undefined) throw new PromptNotFoundError(String(ids[0] ?? ''), undefined, invalid);
  }
  const fresh = (entry: Entry | undefined) => entry !== undefined && entry.expiresAt > Date.now() && !entry.invalidated;
  const loads = ids.map(async (promptId) => {
    const target = currentTarget(promptId);
    const invalid = target.invalid();
    if (invalid !== undefined) throw target.notFound(false, invalid);
    if (fresh(path.currentEntry(promptId))) return;
    await path.load(target);
  });
  for (const label of options.labels ?? []) {
    for (const promptId of ids) {
      if (fresh(path.labels!.peek(label, promptId))) continue;
      loads.push(path.load(labels!.target(promptId, label)).then(() => undefined));
    }
  }
  // After the loads: a cold load starts the catalog read beside its own item, under one deadline (one request, as a
  // cold getPrompt); this joins that read (or starts one when nothing was loaded).
  await catalog.refresh().then(() => { path.catalogWarm = true; });
  for (const result of await Promise.allSettled(loads)) {
    if (result.status === 'rejected' && !(result.reason instanceof PromptNotFoundError)) throw result.reason;
  }
}
