import { type CfnElement, Stack, Token, Tokenization } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';

/** Lambda's limit on a function's environment: keys and values together, in bytes. */
export const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4 * 1024;
/** IAM role and user names: at most 64 characters (and the most CloudFormation generates). */
const MAX_IAM_NAME_CHARS = 64;
/** The random part CloudFormation appends to a name it generates (`<stack>-<logical id>-<12 characters>`). */
const GENERATED_SUFFIX_CHARS = 12;
/** What an unresolved value other than a principal ARN is counted as (a table name, an alarm name, an ARN part). */
const OTHER_TOKEN_CHARS = 64;

/**
 * How many characters the ARN of a role or user will have once deployed: exact when the ARN is known at synth,
 * otherwise `arn:aws:iam::<account>:role/` and the role's name, which CloudFormation generates as
 * `<stack>-<logical id>-<12 characters>`, at most 64 characters, unless the role was given one.
 */
export function principalArnChars(principal: iam.IPrincipal, arn: string): number {
  if (!Token.isUnresolved(arn)) return Buffer.byteLength(arn);
  const resource = principal as Partial<iam.IRole & iam.IUser> & IConstruct & { physicalName?: string };
  const prefix = `arn:aws:iam::123456789012:${resource.roleArn !== undefined ? 'role' : 'user'}/`.length;
  const name = resource.physicalName;
  if (typeof name === 'string' && !Token.isUnresolved(name)) return prefix + Buffer.byteLength(name);
  const cfn = resource.node?.defaultChild as CfnElement | undefined;
  if (!cfn) return prefix + MAX_IAM_NAME_CHARS;
  const stack = Stack.of(cfn);
  const stackName = Token.isUnresolved(stack.stackName) ? MAX_IAM_NAME_CHARS : stack.stackName.length;
  const generated = stackName + 1 + stack.resolve(cfn.logicalId).length + 1 + GENERATED_SUFFIX_CHARS;
  return prefix + Math.min(MAX_IAM_NAME_CHARS, generated);
}

/** The bytes of one environment value at deploy time: its literal parts exactly, each unresolved part as `OTHER_TOKEN_CHARS`. */
export function valueBytes(value: string): number {
  const fragments = Tokenization.reverseString(value);
  const literals = fragments.mapTokens({ mapToken: () => '' }).join({ join: (left, right) => `${left}${right}` });
  return Buffer.byteLength(String(literals)) + fragments.tokens.length * OTHER_TOKEN_CHARS;
}

/** The bytes of a whole environment (keys and values), with unresolved values estimated. */
export function environmentBytes(environment: Record<string, string>): number {
  return Object.entries(environment).reduce((sum, [key, value]) => sum + Buffer.byteLength(key) + valueBytes(value), 0);
}
