import { Stack, Token } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { IConstruct } from 'constructs';
import { invalidProp } from './errors';

/** An AWS Region name such as `eu-west-1` or `us-gov-west-1`. */
const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/**
 * The TableV2 replicas for `replicaRegions`, validated: a stack with an explicit Region (the primary, where
 * the sync writes), distinct Region names other than the primary, and no customer managed key (whose replica
 * keys this prop cannot name).
 */
export function replicaTables(
  scope: IConstruct,
  replicaRegions: string[] | undefined,
  encryptionKey: kms.IKey | undefined,
): dynamodb.ReplicaTableProps[] | undefined {
  if (replicaRegions === undefined) return undefined;
  if (Token.isUnresolved(replicaRegions)) {
    throw invalidProp('replicaRegions', 'be a list written in the app', replicaRegions);
  }
  const primary = Stack.of(scope).region;
  if (Token.isUnresolved(primary)) {
    throw new Error('`replicaRegions` must be used in a stack with an explicit region, got a region-agnostic stack. '
      + 'Set `env: { region }` on the stack: it is the primary Region, where the sync writes');
  }
  if (encryptionKey) {
    throw invalidProp('replicaRegions', 'be left unset when `encryptionKey` is set', replicaRegions,
      'A customer managed key needs a key in every replica Region; use the AWS owned key with replicas');
  }
  for (const region of replicaRegions) {
    if (Token.isUnresolved(region) || !REGION.test(region)) {
      throw invalidProp('replicaRegions', 'hold Region names such as \'eu-central-1\'', region);
    }
    if (region === primary) {
      throw invalidProp('replicaRegions', `not include the stack's own Region (${primary}), which holds the primary table`, region);
    }
  }
  if (new Set(replicaRegions).size !== replicaRegions.length) {
    throw invalidProp('replicaRegions', 'name each Region once', replicaRegions);
  }
  return replicaRegions.map((region) => ({ region }));
}
