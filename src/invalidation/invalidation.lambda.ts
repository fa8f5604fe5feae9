/**
 * Invalidation function: DynamoDB stream records of `CURRENT` rows → write-through to the L2 cache (ordering
 * rule of src/schema/l2.ts) → bump the table's freshness epoch. Placeholder: the handler is being built
 * (issue 9); until then it fails every batch rather than pretend to have written anything.
 */
export async function handler(): Promise<never> {
  throw new Error('cdk-prompt-serving: the invalidation handler is not built yet');
}
