import { ArnFormat, Names, Stack } from 'aws-cdk-lib';
import * as elasticache from 'aws-cdk-lib/aws-elasticache';
import { Construct } from 'constructs';
import { l2ReaderAccessRules, l2WriterAccessRules } from '../schema';

/** Engine of the users and the user group: Valkey user groups need no `default` user. */
export const CACHE_USER_ENGINE = 'valkey';

/** ElastiCache names are at most 40 characters. */
const MAX_NAME_LENGTH = 40;

/**
 * A lowercase ElastiCache name unique in the account, derived from `scope`'s path: at most 40 characters,
 * letters and digits, then `-suffix`. Stable across deploys (renaming the construct renames the resource).
 */
export function generatedCacheName(scope: Construct, suffix?: string): string {
  const room = MAX_NAME_LENGTH - (suffix ? suffix.length + 1 : 0);
  const base = Names.uniqueResourceName(scope, { maxLength: room }).toLowerCase().replace(/[^a-z0-9]/g, '');
  const name = /^[a-z]/.test(base) ? base : `c${base.slice(0, room - 1)}`;
  return suffix ? `${name}-${suffix}` : name;
}

/** `arn:<partition>:elasticache:<region>:<account>:<resource>:<name>` in `scope`'s stack. */
export function elastiCacheArn(scope: Construct, resource: 'serverlesscache' | 'replicationgroup' | 'user', name: string): string {
  return Stack.of(scope).formatArn({ service: 'elasticache', resource, resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
}

/** The two IAM-authenticated users of a cache and the user group holding them. */
export interface CacheUsers {
  readonly reader: elasticache.CfnUser;
  readonly writer: elasticache.CfnUser;
  readonly userGroup: elasticache.CfnUserGroup;
}

/**
 * One user for readers (`l2ReaderAccessRules`: read the table's keys, write only its reader fills) and one for the
 * invalidation function (`l2WriterAccessRules`), both limited to `tableName`'s keys; IAM authentication, so user
 * id and user name are the same.
 */
export function createCacheUsers(scope: Construct, tableName: string): CacheUsers {
  const user = (id: string, suffix: string, rules: string) => {
    const holder = new Construct(scope, id);
    const userId = generatedCacheName(scope, suffix);
    return new elasticache.CfnUser(holder, 'Resource', {
      engine: CACHE_USER_ENGINE,
      userId,
      userName: userId,
      authenticationMode: { Type: 'iam' },
      accessString: `on ${rules}`,
    });
  };
  const reader = user('ReaderUser', 'reader', l2ReaderAccessRules(tableName));
  const writer = user('WriterUser', 'writer', l2WriterAccessRules(tableName));
  const groupHolder = new Construct(scope, 'UserGroup');
  const userGroup = new elasticache.CfnUserGroup(groupHolder, 'Resource', {
    engine: CACHE_USER_ENGINE,
    userGroupId: generatedCacheName(scope, 'users'),
    userIds: [reader.ref, writer.ref],
  });
  return { reader, writer, userGroup };
}
