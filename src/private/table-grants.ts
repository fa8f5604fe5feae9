import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { validateGrantPromptIds } from './validate-props';
import { CATALOG_ID, isValidPromptId } from '../schema';

/**
 * Table actions on `table` (to the principal, or the table's resource policy across accounts) plus `keyActions`
 * on the table's customer managed key, if it has one. Shared by the construct and an imported serving table.
 */
export function grantOnTable(
  grantee: iam.IGrantable,
  table: dynamodb.TableBaseV2,
  tableActions: string[],
  keyActions: string[],
  conditions?: Record<string, Record<string, unknown>>,
): iam.Grant {
  const grant = iam.Grant.addToPrincipalOrResource({
    grantee,
    actions: tableActions,
    resourceArns: [table.tableArn],
    resource: table,
    resourceSelfArns: ['*'],
    conditions,
  });
  const keyGrant = table.encryptionKey?.grant(grantee, ...keyActions);
  return keyGrant ? grant.combine(keyGrant) : grant;
}

/** The `dynamodb:LeadingKeys` condition of a read grant scoped to `promptIds` (plus the catalog), if any. */
export function readConditions(promptIds: string[] | undefined): Record<string, Record<string, unknown>> | undefined {
  return promptIds
    ? { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [...scopedPromptIds(promptIds), CATALOG_ID] } }
    : undefined;
}

/** The ids of a scoped read grant: validated (`validateGrantPromptIds`), deduplicated; the catalog is added by the caller. */
function scopedPromptIds(promptIds: unknown): string[] {
  return validateGrantPromptIds(promptIds, isValidPromptId, CATALOG_ID);
}
