/**
 * The wire contract shared by the construct, the sync and invalidation handlers and the runtime clients,
 * one idea per file. It is the only code those share. No dependency on aws-cdk-lib, constructs or the AWS SDK,
 * so the runtime client can import it without growing a Lambda bundle. See README "Wire contract". Not
 * exported from the jsii entry point (`src/index.ts`). The Python client mirrors these files in
 * `python/cdk_prompt_serving_runtime/`; `test/conformance/` holds the fixtures both run.
 */
export * from './keys';
export * from './checksum';
export * from './template';
export * from './catalog';
export * from './env';
export * from './metrics';
export * from './sources';
export * from './l2';
export * from './labels';
export * from './reserved-attributes';
