/**
 * Label items for the reader's tests, in the wire contract's shape (src/schema/labels.ts): what the release path
 * (admin API, CLI, rollout controller) writes, written here directly so the reader is tested on its own.
 */
import { DeleteItemCommand, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  Attr, checksum, LabelAttr, labelSortKey, PromptContent, RolloutAttr, SCHEMA_VERSION, STATUS_ACTIVE,
} from '../../src/schema';
import { toItem } from '../../src/schema/ddb-codec';

const revisions = new Map<string, number>();

/** Points label `label` of `promptId` at version `versionNumber` (a full copy of `content`), keeping any extra attributes given. */
export async function writeLabel(
  client: DynamoDBClient, tableName: string, promptId: string, label: string, versionNumber: number, content: PromptContent,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const key = `${tableName}/${promptId}/${label}`;
  const revision = (revisions.get(key) ?? 0) + 1;
  revisions.set(key, revision);
  await client.send(new PutItemCommand({
    TableName: tableName,
    Item: toItem({
      ...content,
      [Attr.promptId]: promptId,
      [Attr.version]: labelSortKey(label),
      [Attr.versionNumber]: versionNumber,
      [Attr.checksum]: checksum(content),
      [Attr.status]: STATUS_ACTIVE,
      [Attr.schemaVersion]: SCHEMA_VERSION,
      [Attr.revision]: revision,
      [LabelAttr.label]: label,
      [LabelAttr.movedAt]: new Date().toISOString(),
      [LabelAttr.movedBy]: 'arn:aws:iam::123456789012:role/release',
      ...extra,
    }),
  }));
}

/** A rollout map as the controller writes it. */
export function rolloutMap(rolloutId: string, candidateVersion: number, candidateContent: PromptContent, percentBp: number): Record<string, unknown> {
  return {
    [RolloutAttr.rolloutId]: rolloutId,
    [RolloutAttr.candidateVersion]: candidateVersion,
    [RolloutAttr.candidateChecksum]: checksum(candidateContent),
    [RolloutAttr.percentBp]: percentBp,
    [RolloutAttr.stepsBp]: [],
    [RolloutAttr.startedAt]: new Date().toISOString(),
    [RolloutAttr.startedBy]: 'arn:aws:iam::123456789012:role/release',
  };
}

/** Sets the rollout's share (the controller's step), or any raw `rollout` value (a hand edit). */
export async function setRollout(client: DynamoDBClient, tableName: string, promptId: string, label: string, rollout: unknown): Promise<void> {
  await client.send(new UpdateItemCommand({
    TableName: tableName,
    Key: toItem({ [Attr.promptId]: promptId, [Attr.version]: labelSortKey(label) }),
    UpdateExpression: 'SET #r = :r',
    ExpressionAttributeNames: { '#r': LabelAttr.rollout },
    ExpressionAttributeValues: { ':r': toItem({ r: rollout }).r },
  }));
}

/** Removes the rollout (abort: the label's own content stays). */
export async function removeRollout(client: DynamoDBClient, tableName: string, promptId: string, label: string): Promise<void> {
  await client.send(new UpdateItemCommand({
    TableName: tableName,
    Key: toItem({ [Attr.promptId]: promptId, [Attr.version]: labelSortKey(label) }),
    UpdateExpression: 'REMOVE #r',
    ExpressionAttributeNames: { '#r': LabelAttr.rollout },
  }));
}

export async function deleteLabel(client: DynamoDBClient, tableName: string, promptId: string, label: string): Promise<void> {
  await client.send(new DeleteItemCommand({ TableName: tableName, Key: toItem({ [Attr.promptId]: promptId, [Attr.version]: labelSortKey(label) }) }));
}
