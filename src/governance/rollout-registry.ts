/**
 * Reading the rollout registry (one strongly consistent Query of its partition) the way the rollout controller
 * needs it: every live rollout found, even when its registry item was broken by hand (its label item's rollout is
 * then the truth, so its alarms still abort it), and every item it can never act on dropped once, logged, instead
 * of failing every minute.
 */
import { QueryCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { readRegistryItem } from './rollout-items';
import { PARTITION_KEY, SORT_KEY } from '../schema';
import { Item, fromItem } from '../schema/ddb-codec';
import { ROLLOUTS_ID, RegistryEntry, Rollout } from '../write/label-item';
import type { LabelWrites } from '../write/label-writes';

/** A registry item dropped because nothing could ever act on it. */
export interface DroppedRegistryItem {
  readonly key: string;
  readonly promptId?: string;
  readonly label?: string;
  readonly problem: string;
}

export interface RegistryScan {
  readonly entries: RegistryEntry[];
  readonly dropped: DroppedRegistryItem[];
}

/** The label's rollout as read: a rollout, a string saying what is broken, or none. */
export type LabelRolloutReader = (promptId: string, label: string) => Promise<Rollout | string | undefined>;

export async function scanRegistry(
  client: DynamoDBClient, tableName: string, writes: LabelWrites, labelRollout: LabelRolloutReader,
): Promise<RegistryScan> {
  const entries: RegistryEntry[] = [];
  const dropped: DroppedRegistryItem[] = [];
  let startKey: Item | undefined;
  for (let page = 0; page < 1_000; page++) {
    const out = await client.send(new QueryCommand({
      TableName: tableName,
      ConsistentRead: true,
      KeyConditionExpression: '#pk = :rollouts',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY },
      ExpressionAttributeValues: { ':rollouts': { S: ROLLOUTS_ID } },
      ExclusiveStartKey: startKey,
    }));
    for (const raw of out.Items ?? []) {
      const key = raw[SORT_KEY]?.S ?? '';
      const read = readRegistryItem(fromItem(raw));
      if (read.kind === 'entry') {
        entries.push(read.entry);
        continue;
      }
      if (read.kind === 'repair') {
        const rollout = await labelRollout(read.promptId, read.label);
        if (rollout !== undefined && typeof rollout !== 'string') {
          const fields = { key, promptId: read.promptId, label: read.label, problem: read.problem };
          warn('a rollout registry item is broken; its label item\'s rollout is used', fields);
          const { rolloutId, alarms, nextStepAt } = rollout;
          entries.push({ promptId: read.promptId, label: read.label, rolloutId, alarms, nextStepAt });
          continue;
        }
        if (typeof rollout === 'string') {
          warn('a rollout registry item and its label\'s rollout are both broken: abort the rollout', { key, promptId: read.promptId, label: read.label, problem: rollout });
          continue;
        }
      }
      const problem = read.kind === 'repair' ? `${read.problem}, and its label has no rollout` : read.problem;
      if (await writes.dropRegistryItem(raw)) {
        warn('dropped a rollout registry item nothing can act on', { key, promptId: read.promptId, label: read.label, problem });
        dropped.push({ key, promptId: read.promptId, label: read.label, problem });
      }
    }
    startKey = out.LastEvaluatedKey;
    if (!startKey) break;
  }
  return { entries, dropped };
}

function warn(message: string, fields: Record<string, unknown>): void {
  console.error(JSON.stringify({ level: 'WARN', message, ...fields }));
}
