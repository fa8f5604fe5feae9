import { Template } from 'aws-cdk-lib/assertions';
import { newCacheStack } from './cache-util';
import { newServingTable, onlyResource } from './util';
import { PromptCache } from '../../src';

// What cfn-lint (scripts/cfn-lint.sh, over every synthesized template) asked of the construct, pinned here.
describe('cfn-lint findings fixed in the construct', () => {
  test('I3011: the replication group says what happens to it on delete and replace (deleted: it holds only copies)', () => {
    // GIVEN
    const { stack, vpc } = newCacheStack();
    // WHEN
    newServingTable(stack, { cache: PromptCache.replicationGroup({ vpc }) });
    // THEN
    const group = onlyResource(Template.fromStack(stack), 'AWS::ElastiCache::ReplicationGroup');
    expect(group.DeletionPolicy).toBe('Delete');
    expect(group.UpdateReplacePolicy).toBe('Delete');
  });
});
