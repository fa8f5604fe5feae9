/** Jest global teardown: stop DynamoDB Local and wait for the JVM to exit. */
export default async function globalTeardown(): Promise<void> {
  const ddb = (globalThis as any).__DYNAMODB_LOCAL__;
  if (ddb) await ddb.stop();
}
