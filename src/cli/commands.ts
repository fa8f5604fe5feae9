/** The CLI commands for the dev loop: `list`, `sync --directory` and `validate`. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { Attr, CATALOG_ID, CURRENT, PARTITION_KEY, SORT_KEY } from '../schema';
import { fromItem } from '../schema/ddb-codec';
import { SyncEngine, SyncReport } from '../sync/engine';
import { DirectoryPromptSource } from '../sync/sources/directory';
import { checkPromptDirectory, formatProblem } from '../sync/sources/directory-check';

/** One row of `list`. */
export interface PromptListing {
  readonly promptId: string;
  readonly versionNumber: number;
  readonly status: string;
  readonly syncedAt: string;
}

/**
 * Every prompt's `CURRENT` pointer (the catalog item left out), sorted by id. One paginated `Scan` with a
 * filter on the sort key, so it needs `dynamodb:Scan` on the table (an operator's permission, not a reader's).
 */
export async function listPrompts(client: DynamoDBClient, tableName: string): Promise<PromptListing[]> {
  const rows: PromptListing[] = [];
  const pages = paginateScan({ client }, {
    TableName: tableName,
    FilterExpression: '#sk = :current AND #pk <> :catalog',
    ProjectionExpression: '#pk, #vn, #st, #sa',
    ExpressionAttributeNames: {
      '#pk': PARTITION_KEY, '#sk': SORT_KEY, '#vn': Attr.versionNumber, '#st': Attr.status, '#sa': Attr.syncedAt,
    },
    ExpressionAttributeValues: { ':current': { S: CURRENT }, ':catalog': { S: CATALOG_ID } },
  });
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      const row = fromItem(item);
      rows.push({
        promptId: String(row[PARTITION_KEY]),
        versionNumber: Number(row[Attr.versionNumber]),
        status: String(row[Attr.status] ?? ''),
        syncedAt: String(row[Attr.syncedAt] ?? ''),
      });
    }
  }
  return rows.sort((a, b) => (a.promptId < b.promptId ? -1 : a.promptId > b.promptId ? 1 : 0));
}

/** A full sync of `directory` into the table with the engine the sync function runs. */
export function syncDirectory(client: DynamoDBClient, tableName: string, directory: string): Promise<SyncReport> {
  return new SyncEngine({ dynamoDBClient: client, tableName, source: new DirectoryPromptSource(path.resolve(directory)) }).fullSync();
}

/** The result of `validate`: how many prompt files were checked and one line per problem. */
export interface ValidationResult {
  readonly files: number;
  readonly problems: string[];
  /** Files that sync but serve less well (a variable before a cache point, declared variables never used). */
  readonly warnings?: string[];
}

/** Checks a prompts-as-code directory by the rules `PromptSource.fromDirectory` applies at synth. */
export async function validateDirectory(directory: string): Promise<ValidationResult> {
  const root = path.resolve(directory);
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) return { files: 0, problems: [`${directory}: not a directory`] };
  const { files, problems, warnings } = checkPromptDirectory(root);
  if (files.length === 0 && problems.length === 0) return { files: 0, problems: [`${directory}: no prompt files (.md, .yaml, .yml, .json) found`] };
  return { files: files.length, problems: problems.map(formatProblem), warnings: warnings.map(formatProblem) };
}
