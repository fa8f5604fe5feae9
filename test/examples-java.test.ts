/**
 * The Java blocks of docs/EXAMPLES.md resolve every class name they use, as pasted into a Stack's constructor: each
 * capitalised name is imported by a single-type import, or found in exactly one of the packages the block imports
 * on demand (java.lang included, which is why `Runtime` needs a single-type import beside `lambda.*`). Names come
 * from aws-cdk-lib's assembly (its Java packages) and the construct's API.md, so this runs without a JVM; the Java
 * app test (`npx projen test:java-app`) compiles the same blocks for real, slowly.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';

const ROOT = path.join(__dirname, '..');

interface JavaTargets { targets?: { java?: { package: string } } }
interface Assembly extends JavaTargets {
  types?: Record<string, { name: string; namespace?: string }>;
  submodules?: Record<string, JavaTargets>;
}

/** A jsii assembly, following its redirect to the gzipped file (aws-cdk-lib ships `.jsii.gz`). */
function readAssembly(dir: string): Assembly {
  const first = JSON.parse(fs.readFileSync(path.join(dir, '.jsii'), 'utf8'));
  if (first.schema !== 'jsii/file-redirect') return first;
  const data = fs.readFileSync(path.join(dir, first.filename));
  return JSON.parse((first.compression === 'gzip' ? zlib.gunzipSync(data) : data).toString('utf8'));
}

/** The simple names a Java package offers on demand: aws-cdk-lib's submodules, the construct, java.lang's usual ones. */
function packages(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (pkg: string, name: string) => {
    if (!out.has(pkg)) out.set(pkg, new Set());
    out.get(pkg)!.add(name);
  };
  const cdk = readAssembly(path.join(ROOT, 'node_modules/aws-cdk-lib'));
  const javaPackage = (namespace: string | undefined): string | undefined => {
    if (!namespace) return cdk.targets!.java!.package;
    return cdk.submodules?.[`aws-cdk-lib.${namespace}`]?.targets?.java?.package;
  };
  for (const type of Object.values(cdk.types ?? {})) {
    const pkg = javaPackage(type.namespace); // undefined for a nested type (namespace `aws_x.CfnY`)
    if (pkg) add(pkg, type.name);
  }
  for (const match of fs.readFileSync(path.join(ROOT, 'API.md'), 'utf8').matchAll(/id="cdk-prompt-serving\.(\w+)"/g)) {
    add('io.github.cdkpromptserving', match[1]);
  }
  for (const name of ['String', 'Object', 'Integer', 'Long', 'Boolean', 'Double', 'Number', 'Runtime', 'Math', 'System',
    'Exception', 'Error', 'Process', 'Module', 'Record', 'Void', 'Class', 'Thread', 'Iterable', 'Enum', 'Override']) {
    add('java.lang', name);
  }
  return out;
}

/** The ```java blocks of a markdown page. */
function javaBlocks(text: string): string[] {
  return [...text.matchAll(/^```java\n([\s\S]*?)^```/gm)].map((m) => m[1]);
}

/** Names the block cannot resolve, or resolves twice, as pasted. */
function unresolved(block: string, offered: Map<string, Set<string>>): string[] {
  const imports = [...block.matchAll(/^import ([\w.]+)(\.\*)?;$/gm)];
  const single = new Map(imports.filter((m) => !m[2]).map((m) => [m[1].split('.').pop()!, m[1]]));
  const onDemand = ['java.lang', ...imports.filter((m) => m[2]).map((m) => m[1])];
  const code = block
    .replace(/^import .*$/gm, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/"(?:[^"\\]|\\.)*"/g, '""');
  // A capitalised name not after a dot (a member) and not all capitals (a constant).
  const names = new Set([...code.matchAll(/(?<![.\w])([A-Z][A-Za-z0-9]*)\b/g)].map((m) => m[1]).filter((n) => /[a-z]/.test(n)));
  const problems: string[] = [];
  for (const name of names) {
    if (single.has(name)) continue;
    const from = onDemand.filter((pkg) => offered.get(pkg)?.has(name));
    if (from.length === 0) problems.push(`${name}: not imported`);
    if (from.length > 1) problems.push(`${name}: ambiguous (${from.join(', ')})`);
  }
  return problems;
}

const offered = packages();

test('the rule finds a missing import and an ambiguous name, and accepts a resolved block', () => {
  // GIVEN blocks as rosetta alone wrote them, and as docs/EXAMPLES.md shows them
  const bare = 'import io.github.cdkpromptserving.PromptServingTable;\n\nPromptServingTable.Builder.create(this, "P")\n'
    + '    .source(PromptSource.bedrock(BedrockPromptSourceOptions.builder().promptIds(List.of("A")).build())).build();\n';
  const clash = 'import software.amazon.awscdk.services.lambda.*;\n\nRuntime r = Runtime.NODEJS_22_X;\n';
  const fixed = 'import java.util.List;\nimport io.github.cdkpromptserving.*;\n\n' + bare.split('\n\n')[1];
  // THEN the rule names what is missing or ambiguous, and nothing in the fixed block
  expect(unresolved(bare, offered).sort()).toEqual(['BedrockPromptSourceOptions: not imported', 'List: not imported', 'PromptSource: not imported']);
  expect(unresolved(clash, offered)).toEqual(['Runtime: ambiguous (java.lang, software.amazon.awscdk.services.lambda)']);
  expect(unresolved(fixed, offered)).toEqual([]);
});

test('every Java block of docs/EXAMPLES.md resolves every class name it uses, as pasted', () => {
  // GIVEN the Java blocks of docs/EXAMPLES.md
  const blocks = javaBlocks(fs.readFileSync(path.join(ROOT, 'docs/EXAMPLES.md'), 'utf8'));
  expect(blocks.length).toBeGreaterThan(10);
  // WHEN each is checked against the packages it imports
  const problems = blocks.flatMap((block, i) => unresolved(block, offered).map((p) => `block ${i + 1} (${block.split('\n').find((l) => /\(this, "/.test(l))?.trim() ?? ''}): ${p}`));
  // THEN none uses a name it does not import, or one two of its imports offer
  expect(problems).toEqual([]);
});
