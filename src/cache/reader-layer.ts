import * as path from 'node:path';
import { Annotations, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

/**
 * The cache client layers `addReader` attaches to cache readers (docs/adr/0003-reader-layer.md), built at bundle time
 * into `assets/layer/` by scripts/build-layer.ts and shipped in the npm package:
 * - Node.js: node-redis in one minified CommonJS file at `nodejs/node_modules/redis` (Lambda: `/opt/nodejs/node_modules`,
 *   on `NODE_PATH`); the runtime client loads it with a `createRequire` require, from CommonJS and ES module bundles.
 * - Python: redis-py and the Python runtime client `cdk_prompt_serving_runtime` under `python/` (`/opt/python`).
 */
const LAYER_ASSETS = path.join(__dirname, '..', '..', 'assets', 'layer');

interface LayerKind {
  /** Construct id of the layer, one per stack. */
  readonly id: string;
  readonly folder: string;
  readonly description: string;
  /** SPDX licence of the layer's contents. */
  readonly license: string;
}

const NODEJS_LAYER: LayerKind = {
  id: 'PromptServingCacheClientNodejs',
  folder: 'nodejs',
  description: 'cdk-prompt-serving: node-redis for the runtime client\'s cache tier (attached by addReader)',
  // node-redis (MIT) with cluster-key-slot (Apache-2.0) and the client's own cache adapter (Apache-2.0)
  license: 'Apache-2.0 AND MIT',
};
const PYTHON_LAYER: LayerKind = {
  id: 'PromptServingCacheClientPython',
  folder: 'python',
  description: 'cdk-prompt-serving: the Python runtime client and redis-py (attached by addReader)',
  license: 'Apache-2.0 AND MIT',
};

/** The stack's layer of `kind`, made on first use (one per stack, however many readers). */
function layerOf(stack: Stack, kind: LayerKind): lambda.ILayerVersion {
  const existing = stack.node.tryFindChild(kind.id) as lambda.ILayerVersion | undefined;
  if (existing) {
    return existing;
  }
  return new lambda.LayerVersion(stack, kind.id, {
    code: lambda.Code.fromAsset(path.join(LAYER_ASSETS, kind.folder)),
    description: kind.description,
    license: kind.license,
  });
}

/**
 * Gives a cache reader its cache client by the function's runtime family: the Node.js layer (node-redis) or the
 * Python layer (runtime client + redis-py). A Java reader gets no layer (its jar carries the Java runtime client and Jedis,
 * docs/adr/0008-java-runtime-client.md) and an info naming that client; any other runtime a synth-time warning saying what to do.
 */
export function attachCacheClientLayer(fn: lambda.Function): void {
  const family = fn.runtime.family;
  if (family === lambda.RuntimeFamily.NODEJS) {
    fn.addLayers(layerOf(Stack.of(fn), NODEJS_LAYER));
  } else if (family === lambda.RuntimeFamily.PYTHON) {
    fn.addLayers(layerOf(Stack.of(fn), PYTHON_LAYER));
  } else if (family === lambda.RuntimeFamily.JAVA) {
    Annotations.of(fn).addInfo(`\`addReader\`: ${fn.node.path} runs ${fn.runtime.name}: read with the Java runtime client `
      + '(Maven io.github.cdkpromptserving:cdk-prompt-serving-runtime, with redis.clients:jedis in the function\'s jar for the cache); '
      + 'it reads the environment and the cache this reader was given.');
  } else {
    warnNoLayer(fn);
  }
}

function warnNoLayer(scope: Construct & { runtime: lambda.Runtime }): void {
  Annotations.of(scope).addWarningV2('cdk-prompt-serving:readerRuntimeWithoutCacheClient',
    `\`addReader\`: ${scope.node.path} runs ${scope.runtime.name}, for which cdk-prompt-serving ships no cache client `
    + '(Node.js, Python and Java only): it gets the cache environment and permissions, but its reads go to the table unless '
    + 'its own code connects to the cache (README "L2 cache" describes the key and value format).');
}
