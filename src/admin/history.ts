/**
 * A prompt's history: one strongly consistent Query on its partition, projected to metadata (the pointer
 * sorts first as `CURRENT`, then the versions oldest first as `v000001`, `v000002`, …).
 */
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { Attr, CURRENT, PARTITION_KEY, PromptStatus, SORT_KEY, parseVersionKey } from '../schema';
import { Item, fromItem } from '../schema/ddb-codec';

/** One immutable version of a prompt. */
export interface PromptVersionSummary {
  readonly versionNumber: number;
  /** `sha256:` + 64 hex digits of the version's content. */
  readonly checksum: string;
  /** When the sync wrote the version (ISO-8601). */
  readonly syncedAt: string;
  /** The source's own label for what was copied (a Bedrock version number, a file checksum, …). */
  readonly sourceVersion: string;
  /** When the source last changed the prompt before it was copied, if the source says. */
  readonly sourceUpdatedAt?: string;
  /** Whether `CURRENT` is a copy of this version (served only while `status` is `ACTIVE`). */
  readonly current: boolean;
}

/** The pointer's state and every version of one prompt. */
export interface PromptHistory {
  readonly promptId: string;
  /** `ACTIVE`, or `DELETED` once the source no longer has the prompt (readers then get not-found). */
  readonly status: PromptStatus;
  /** The version `CURRENT` is a copy of. */
  readonly currentVersionNumber: number;
  /** The highest version ever written; the next source change becomes this + 1. */
  readonly latestVersionNumber: number;
  /** When an operator made the current version current, if one did (a sync writing a new version clears it). */
  readonly activatedAt?: string;
  readonly activatedBy?: string;
  /** Oldest first. */
  readonly versions: readonly PromptVersionSummary[];
}

const HISTORY_ATTRIBUTES = [
  Attr.version, Attr.versionNumber, Attr.latestVersionNumber, Attr.checksum, Attr.status, Attr.sourceVersion,
  Attr.sourceUpdatedAt, Attr.syncedAt, Attr.activatedAt, Attr.activatedBy,
];

/** The history of `promptId`, or `undefined` when the table has no pointer for it. */
export async function queryHistory(client: DynamoDBClient, tableName: string, promptId: string): Promise<PromptHistory | undefined> {
  const items: Record<string, unknown>[] = [];
  let startKey: Item | undefined;
  do {
    const out = await client.send(new QueryCommand({
      TableName: tableName,
      ConsistentRead: true,
      // From `CURRENT` on: skips the audit trail (`AUDIT#…` sorts before it), which grows with every move.
      KeyConditionExpression: '#pk = :id AND #sk >= :current',
      ProjectionExpression: HISTORY_ATTRIBUTES.map((_, i) => `#a${i}`).join(', '),
      ExpressionAttributeNames: {
        '#pk': PARTITION_KEY,
        '#sk': SORT_KEY,
        ...Object.fromEntries(HISTORY_ATTRIBUTES.map((a, i) => [`#a${i}`, a])),
      },
      ExpressionAttributeValues: { ':id': { S: promptId }, ':current': { S: CURRENT } },
      ExclusiveStartKey: startKey,
    }));
    items.push(...(out.Items ?? []).map(fromItem));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return toHistory(promptId, items);
}

function toHistory(promptId: string, items: readonly Record<string, unknown>[]): PromptHistory | undefined {
  const pointer = items.find((i) => i[Attr.version] === CURRENT);
  if (!pointer) return undefined;
  const currentVersionNumber = pointer[Attr.versionNumber] as number;
  const versions = items
    .filter((i) => parseVersionKey(i[Attr.version] as string) !== undefined)
    .map((v): PromptVersionSummary => ({
      versionNumber: v[Attr.versionNumber] as number,
      checksum: v[Attr.checksum] as string,
      syncedAt: v[Attr.syncedAt] as string,
      sourceVersion: v[Attr.sourceVersion] as string,
      sourceUpdatedAt: v[Attr.sourceUpdatedAt] as string | undefined,
      current: v[Attr.versionNumber] === currentVersionNumber,
    }));
  return {
    promptId,
    status: pointer[Attr.status] as PromptStatus,
    currentVersionNumber,
    latestVersionNumber: (pointer[Attr.latestVersionNumber] as number | undefined) ?? currentVersionNumber,
    activatedAt: pointer[Attr.activatedAt] as string | undefined,
    activatedBy: pointer[Attr.activatedBy] as string | undefined,
    versions,
  };
}
