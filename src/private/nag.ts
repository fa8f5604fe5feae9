import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * The id cdk-nag gives an `AwsSolutions-IAM5` finding for one wildcard resource, so that exactly that
 * finding can be acknowledged: `AwsSolutions-IAM5[Resource::<resource>]`, with references written as cdk-nag
 * writes them (`<AWS::Region>`, `<Logical.Attribute>`) and literals as they are.
 *
 * Acknowledging the granular finding rather than the whole rule keeps any wildcard someone adds later visible.
 */
export function wildcardResourceFinding(scope: IConstruct, resource: string): string {
  return `AwsSolutions-IAM5[Resource::${flatten(Stack.of(scope).resolve(resource))}]`;
}

function flatten(node: unknown): string {
  if (typeof node === 'string') {
    return node.replace(/\$\{/g, '<').replace(/\}/g, '>');
  }
  const fn = (node ?? {}) as Record<string, any>;
  if (fn['Fn::Join']) {
    const [delimiter, parts] = fn['Fn::Join'] as [string, unknown[]];
    return parts.map(flatten).join(delimiter);
  }
  if (fn.Ref) {
    return `<${flatten(fn.Ref)}>`;
  }
  if (fn['Fn::GetAtt']) {
    const [resource, attribute] = fn['Fn::GetAtt'] as [unknown, unknown];
    return `<${flatten(resource)}.${flatten(attribute)}>`;
  }
  return JSON.stringify(node);
}
