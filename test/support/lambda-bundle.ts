import type { BuildOptions } from 'esbuild';

/**
 * esbuild options that bundle a reader as `NodejsFunction` does by default for a Node.js 20+ function: one minified
 * CommonJS file, the AWS SDK for JavaScript v3 left out (the Lambda runtime provides it). Benches and tests that time
 * or run "the reader as deployed" spread these and add their entry and output.
 */
export const LAMBDA_BUNDLE_OPTIONS: BuildOptions = {
  bundle: true,
  minify: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: ['@aws-sdk/*'],
  logLevel: 'silent',
};
