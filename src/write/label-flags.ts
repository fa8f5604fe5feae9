/**
 * The `source_deleted_at` flag of a prompt's label items: a label keeps serving its own copy after its prompt is
 * deleted at the source, flagged so readers can tell. The sync sets the flag on every label when it marks the
 * pointer `DELETED` and removes it when the prompt comes back; a governed full sync finds the labels left out of
 * line ({@link LabelFlags.drift}) and brings them back in line.
 */
import {
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { sendGuarded } from './guarded-write';
import { consistentScan } from './scan';
import {
  Attr,
  CURRENT,
  LABEL_SORT_KEY_PREFIX,
  LabelAttr,
  PARTITION_KEY,
  SORT_KEY,
  STATUS_ACTIVE,
  STATUS_DELETED,
} from '../schema';
import { Item } from '../schema/ddb-codec';

/** Query pages read for one prompt's labels (each page is at most 1 MB of label items, read before projection). */
const MAX_LABEL_PAGES = 1_000;
/** Times one label's `source_deleted_at` is re-read and written after losing to a concurrent label write. */
const MAX_LABEL_FLAG_ATTEMPTS = 5;

export class LabelFlags {
  constructor(private readonly client: DynamoDBClient, private readonly tableName: string) {}

  /**
   * Sets (`at`) or removes (`undefined`) `source_deleted_at` on every label item of the prompt, bumping each
   * label's `revision` so the stream writes it through; each update is guarded on the revision read. A label
   * written meanwhile (a move, a rollout's step or abort, which copy the flag as they read it) is read again and
   * brought in line, up to {@link MAX_LABEL_FLAG_ATTEMPTS} times; a label still racing then fails the call (the
   * next full sync reconciles it: {@link drift}). Returns how many labels were updated.
   */
  async markSourceDeleted(id: string, at: string | undefined): Promise<number> {
    // Every page: a Query returns at most 1 MB, and a label item may be up to 400 KB (3 labels can fill a page).
    const labels: Item[] = [];
    let startKey: Item | undefined;
    for (let page = 0; page < MAX_LABEL_PAGES; page++) {
      const out = await this.client.send(new QueryCommand({
        TableName: this.tableName,
        ConsistentRead: true,
        KeyConditionExpression: '#pk = :id AND begins_with(#sk, :label)',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY, '#rev': Attr.revision, '#sda': LabelAttr.sourceDeletedAt },
        ExpressionAttributeValues: { ':id': { S: id }, ':label': { S: LABEL_SORT_KEY_PREFIX } },
        ProjectionExpression: '#pk, #sk, #rev, #sda',
        ExclusiveStartKey: startKey,
      }));
      labels.push(...(out.Items ?? []));
      startKey = out.LastEvaluatedKey;
      if (!startKey) break;
    }
    if (startKey) throw new Error(`the labels of prompt '${id}' span more than ${MAX_LABEL_PAGES} Query pages; source_deleted_at was not brought in line on all of them`);
    let updated = 0;
    for (const listed of labels) {
      const outcome = await this.flagLabel(listed, at);
      if (outcome === 'written') updated++;
    }
    return updated;
  }

  /** One label's `source_deleted_at` brought in line with `at`, re-read after each lost race. */
  private async flagLabel(listed: Item, at: string | undefined): Promise<'written' | 'in-line'> {
    let label: Item | undefined = listed;
    for (let attempt = 0; attempt < MAX_LABEL_FLAG_ATTEMPTS; attempt++) {
      if (attempt > 0) {
        const read = await this.client.send(new GetItemCommand({
          TableName: this.tableName,
          Key: { [PARTITION_KEY]: listed[PARTITION_KEY], [SORT_KEY]: listed[SORT_KEY] },
          ConsistentRead: true,
          ProjectionExpression: '#pk, #sk, #rev, #sda',
          ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY, '#rev': Attr.revision, '#sda': LabelAttr.sourceDeletedAt },
        }));
        label = read.Item;
        if (label === undefined) return 'in-line'; // deleted meanwhile
      }
      const has = label[LabelAttr.sourceDeletedAt] !== undefined;
      if ((at !== undefined) === has) return 'in-line';
      const rev = label[Attr.revision];
      const next = { N: String((rev?.N !== undefined && Number.isSafeInteger(Number(rev.N)) ? Number(rev.N) : 0) + 1) };
      const outcome = await sendGuarded(this.client, new UpdateItemCommand({
        TableName: this.tableName,
        Key: { [PARTITION_KEY]: label[PARTITION_KEY], [SORT_KEY]: label[SORT_KEY] },
        UpdateExpression: at !== undefined ? 'SET #sda = :at, #rev = :next' : 'REMOVE #sda SET #rev = :next',
        ConditionExpression: rev === undefined ? 'attribute_exists(#pk) AND attribute_not_exists(#rev)' : '#rev = :rev',
        ExpressionAttributeNames: { '#sda': LabelAttr.sourceDeletedAt, '#rev': Attr.revision, ...(rev === undefined ? { '#pk': PARTITION_KEY } : {}) },
        ExpressionAttributeValues: { ':next': next, ...(at !== undefined ? { ':at': { S: at } } : {}), ...(rev !== undefined ? { ':rev': rev } : {}) },
      }));
      if (outcome === 'written') return 'written';
    }
    throw new Error(`label ${listed[SORT_KEY]?.S} of prompt '${listed[PARTITION_KEY]?.S}' kept changing while source_deleted_at was being brought in line (${MAX_LABEL_FLAG_ATTEMPTS} attempts)`);
  }

  /**
   * Prompts whose labels disagree with their pointer about `source_deleted_at`: `deleted` (a DELETED pointer with a
   * label lacking it) and `active` (an ACTIVE pointer with a label holding it). One paged Scan of the pointer and
   * label rows (keys, status and the flag only), run by a governed full sync, so a flag left out of line by a
   * sync cut short or a lost race is brought back by the next full sync.
   */
  async drift(): Promise<{ deleted: string[]; active: string[] }> {
    const status = new Map<string, unknown>();
    const flags = new Map<string, { with: boolean; without: boolean }>();
    for await (const item of consistentScan(this.client, this.tableName, {
      ProjectionExpression: '#pk, #sk, #status, #sda',
      FilterExpression: '#sk = :current OR begins_with(#sk, :label)',
      ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY, '#status': Attr.status, '#sda': LabelAttr.sourceDeletedAt },
      ExpressionAttributeValues: { ':current': { S: CURRENT }, ':label': { S: LABEL_SORT_KEY_PREFIX } },
    })) {
      const id = item[PARTITION_KEY]?.S;
      if (id === undefined || id.startsWith('#')) continue;
      if (item[SORT_KEY]?.S === CURRENT) {
        status.set(id, item[Attr.status]?.S);
      } else if (item[Attr.status]?.S !== STATUS_DELETED) {
        const f = flags.get(id) ?? { with: false, without: false };
        if (item[LabelAttr.sourceDeletedAt] !== undefined) f.with = true;
        else f.without = true;
        flags.set(id, f);
      }
    }
    const deleted: string[] = [];
    const active: string[] = [];
    for (const [id, f] of flags) {
      if (status.get(id) === STATUS_DELETED && f.without) deleted.push(id);
      else if (status.get(id) === STATUS_ACTIVE && f.with) active.push(id);
    }
    return { deleted, active };
  }
}
