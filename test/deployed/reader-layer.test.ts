/**
 * `addReader` on a cache-enabled table gives the function its cache client by runtime family (one layer per stack),
 * warns for other runtimes, and the cache tier alarms on readers that run without the cache.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { PromptServingTable } from '../../src';
import { newCachedTable, newCacheStack, newFunction } from '../construct/cache-util';
import { newServingTable } from '../construct/util';

const root = path.resolve(__dirname, '../..');

function layerIds(template: Template): { nodejs: string; python: string } {
  const layers = template.findResources('AWS::Lambda::LayerVersion');
  const find = (fragment: string) => Object.keys(layers).filter((id) => id.includes(fragment));
  return { nodejs: find('PromptServingCacheClientNodejs')[0], python: find('PromptServingCacheClientPython')[0] };
}

test('Node.js readers get the one node-redis layer of their stack; Python readers the Python one', () => {
  // GIVEN
  const { stack, vpc } = newCacheStack();
  const prompts = newCachedTable(stack, vpc);
  const esm = newFunction(stack, 'ReaderA', vpc);
  const cjs = newFunction(stack, 'ReaderB', vpc);
  const py = new lambda.Function(stack, 'ReaderPy', {
    runtime: lambda.Runtime.PYTHON_3_12, handler: 'app.handler', code: lambda.Code.fromInline('def handler(e, c): pass'), vpc,
  });
  // WHEN
  prompts.addReader(esm);
  prompts.addReader(cjs);
  prompts.addReader(py);
  // THEN one layer of each kind, each function with exactly its own
  const template = Template.fromStack(stack);
  template.resourceCountIs('AWS::Lambda::LayerVersion', 2);
  const ids = layerIds(template);
  template.hasResourceProperties('AWS::Lambda::LayerVersion', {
    Description: Match.stringLikeRegexp('node-redis'), LicenseInfo: 'Apache-2.0 AND MIT',
  });
  for (const fn of [esm, cjs]) {
    const fnId = stack.getLogicalId(fn.node.defaultChild as lambda.CfnFunction);
    expect(template.toJSON().Resources[fnId].Properties.Layers).toEqual([{ Ref: ids.nodejs }]);
  }
  const pyId = stack.getLogicalId(py.node.defaultChild as lambda.CfnFunction);
  expect(template.toJSON().Resources[pyId].Properties.Layers).toEqual([{ Ref: ids.python }]);
});

test('the layers\' contents: node-redis in one file at nodejs/node_modules/redis; redis-py and the client under python/', () => {
  const node = path.join(root, 'assets/layer/nodejs/nodejs/node_modules/redis');
  expect(fs.readdirSync(node).sort()).toEqual(['THIRD-PARTY-LICENSES.txt', 'index.js', 'package.json']);
  const manifest = JSON.parse(fs.readFileSync(path.join(node, 'package.json'), 'utf8'));
  expect(manifest).toMatchObject({ name: 'redis', main: 'index.js', license: 'Apache-2.0 AND MIT' });
  // What the one file holds, each package with its version and licence, and the licence texts beside it
  expect(manifest.bundled.map((p: { name: string; license: string }) => `${p.name} ${p.license}`)).toEqual(['@redis/client MIT', 'cluster-key-slot Apache-2.0']);
  const notices = fs.readFileSync(path.join(node, 'THIRD-PARTY-LICENSES.txt'), 'utf8');
  for (const p of manifest.bundled) expect(notices).toContain(`${p.name} ${p.version} (${p.license})`);
  const py = path.join(root, 'assets/layer/python/python');
  expect(fs.existsSync(path.join(py, 'redis', '__init__.py'))).toBe(true);
  expect(fs.existsSync(path.join(py, 'cdk_prompt_serving_runtime', '__init__.py'))).toBe(true);
});

test('a Java reader gets an info naming the Java runtime client, no warning and no layer', () => {
  // GIVEN
  const { stack, vpc } = newCacheStack();
  const prompts = newCachedTable(stack, vpc);
  const java = new lambda.Function(stack, 'ReaderJava', {
    runtime: lambda.Runtime.JAVA_21, handler: 'x.Handler', code: lambda.Code.fromAsset(path.join(root, 'test/deployed')), vpc,
  });
  // WHEN
  prompts.addReader(java);
  // THEN
  Template.fromStack(stack).resourceCountIs('AWS::Lambda::LayerVersion', 0);
  Annotations.fromStack(stack).hasInfo('/Stack/ReaderJava', Match.stringLikeRegexp('java21.*Java runtime client.*cdk-prompt-serving-runtime'));
  Annotations.fromStack(stack).hasNoWarning('/Stack/ReaderJava', Match.anyValue());
});

test('a reader on another runtime gets a synth-time warning naming what to do, and no layer', () => {
  // GIVEN
  const { stack, vpc } = newCacheStack();
  const prompts = newCachedTable(stack, vpc);
  const ruby = new lambda.Function(stack, 'ReaderRuby', {
    runtime: lambda.Runtime.RUBY_3_3, handler: 'x.handler', code: lambda.Code.fromAsset(path.join(root, 'test/deployed')), vpc,
  });
  // WHEN
  prompts.addReader(ruby);
  // THEN
  Template.fromStack(stack).resourceCountIs('AWS::Lambda::LayerVersion', 0);
  Annotations.fromStack(stack).hasWarning('/Stack/ReaderRuby', Match.stringLikeRegexp('ruby3.3.*ships no cache client.*its own code connects to the cache'));
});

test('an imported table with the owner\'s cache attaches the layer too', () => {
  // GIVEN
  const { stack, vpc } = newCacheStack();
  const owner = newCachedTable(stack, vpc);
  const imported = PromptServingTable.fromTableAttributes(stack, 'Imported', { tableName: 'prompts-prod', cache: owner.cache });
  const reader = newFunction(stack, 'Reader', vpc);
  // WHEN
  imported.addReader(reader);
  // THEN
  const template = Template.fromStack(stack);
  const fnId = stack.getLogicalId(reader.node.defaultChild as lambda.CfnFunction);
  expect(template.toJSON().Resources[fnId].Properties.Layers).toEqual([{ Ref: layerIds(template).nodejs }]);
});

test('no cache, no layer: addReader on a table without a cache leaves the function as it is', () => {
  const { stack } = newCacheStack();
  const prompts = newServingTable(stack, {});
  const reader = newFunction(stack, 'Reader');
  prompts.addReader(reader);
  Template.fromStack(stack).resourceCountIs('AWS::Lambda::LayerVersion', 0);
});

test('the cache tier alarms on readers running without the cache (ReaderCacheUnavailable, Sum ≥ 1 in 5 minutes)', () => {
  // GIVEN / WHEN
  const { stack, vpc } = newCacheStack();
  const prompts = newCachedTable(stack, vpc);
  // THEN
  Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', {
    Namespace: 'CdkPromptServing',
    MetricName: 'ReaderCacheUnavailable',
    Dimensions: [{ Name: 'TableName', Value: { Ref: stack.getLogicalId(prompts.table.node.defaultChild as any) } }],
    Statistic: 'Sum',
    Period: 300,
    Threshold: 1,
    EvaluationPeriods: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
    AlarmDescription: Match.stringLikeRegexp('run without the cache'),
  });
});

test('the readers\' alarm can be turned off like every cache alarm', () => {
  const { stack, vpc } = newCacheStack();
  newCachedTable(stack, vpc, { readerCacheUnavailableAlarm: { enabled: false } });
  Template.fromStack(stack).resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: 'ReaderCacheUnavailable' }, 0);
});
