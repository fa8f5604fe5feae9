/**
 * Who may move which pointer through the release function. IAM decides who may call the function URL at all
 * (`lambda:InvokeFunctionUrl`); this decides what a caller may move, from the grants the construct recorded
 * (`grantRelease(grantee, { labels })`), because DynamoDB's IAM cannot scope a sort key.
 *
 * The rules (docs/GOVERNANCE.md "Who may move what"):
 * - A label named in any scoped grant is **protected**: only principals with a scoped grant naming it may move it.
 * - A principal with an unscoped grant, or with no recorded grant at all (it was allowed by a policy made
 *   outside the construct), may move `CURRENT` and every label that is not protected.
 * - A principal with scoped grants only may move exactly the labels they name, and not `CURRENT`.
 *
 * Callers are matched by account (exactly) and name (regardless of case: IAM role and user names are unique
 * regardless of case): an assumed-role session (`arn:aws:sts::<account>:assumed-role/<role>/<session>`) matches a
 * grant to `arn:aws:iam::<account>:role/<path>/<role>`, an IAM user matches a grant to that user. Any other caller
 * (the account root, a federated user from `sts:GetFederationToken`, which acts with its IAM user's rights but
 * under another ARN) is refused: only role sessions and IAM users use the release path, so a label-scoped user
 * cannot shed its scope by calling as a federated user.
 */

/** A recorded grant: the grantee's role or user ARN, and the labels it may move (`*`: unscoped). */
export interface ReleaseScope {
  readonly principal: string;
  readonly labels: readonly string[] | '*';
}

/** A principal ARN taken apart: account and role or user name. */
export interface PrincipalName {
  readonly kind: 'role' | 'user' | 'other';
  readonly account?: string;
  readonly name?: string;
}

const ASSUMED_ROLE = /^arn:aws[a-z-]*:sts::(\d{12}):assumed-role\/([^/]+)\/[^/]+$/;
const ROLE = /^arn:aws[a-z-]*:iam::(\d{12}):role\/(?:[^]*\/)?([^/]+)$/;
const USER = /^arn:aws[a-z-]*:iam::(\d{12}):user\/(?:[^]*\/)?([^/]+)$/;

/** The account and role or user name of a caller's or a grantee's ARN. */
export function parsePrincipal(arn: string): PrincipalName {
  let m = ASSUMED_ROLE.exec(arn) ?? ROLE.exec(arn);
  if (m) return { kind: 'role', account: m[1], name: m[2] };
  m = USER.exec(arn);
  if (m) return { kind: 'user', account: m[1], name: m[2] };
  return { kind: 'other' };
}

function samePrincipal(a: PrincipalName, b: PrincipalName): boolean {
  return a.kind !== 'other' && a.kind === b.kind && a.account === b.account && a.name?.toLowerCase() === b.name?.toLowerCase();
}

/** The pointer a move targets: `CURRENT` (an activation) or a label name. */
export type MoveTarget = { readonly current: true } | { readonly label: string };

/** Why `callerArn` may not move `target` under `scopes`, or `undefined` when it may. */
export function authorizationProblem(callerArn: string, scopes: readonly ReleaseScope[], target: MoveTarget): string | undefined {
  const caller = parsePrincipal(callerArn);
  if (caller.kind === 'other') {
    return `${callerArn} is neither a role session nor an IAM user: only those may use the release path (the account root and federated users are refused)`;
  }
  const mine = scopes.filter((s) => samePrincipal(caller, parsePrincipal(s.principal)));
  const unscoped = mine.length === 0 || mine.some((s) => s.labels === '*');
  if ('current' in target) {
    return unscoped ? undefined : `${callerArn} may move only the labels it was granted (${grantedLabels(mine).join(', ')}), not CURRENT`;
  }
  if (mine.some((s) => s.labels !== '*' && s.labels.includes(target.label))) return undefined;
  const protectedBy = scopes.some((s) => s.labels !== '*' && s.labels.includes(target.label));
  if (protectedBy) return `label '${target.label}' is protected: only principals granted it by name (grantRelease with labels) may move it, and ${callerArn} is not one`;
  if (unscoped) return undefined;
  return `${callerArn} may move only the labels it was granted (${grantedLabels(mine).join(', ')}), not '${target.label}'`;
}

function grantedLabels(scopes: readonly ReleaseScope[]): string[] {
  return [...new Set(scopes.flatMap((s) => (s.labels === '*' ? [] : [...s.labels])))].sort();
}

/** The recorded grants from their JSON (the construct writes it); throws on anything else. */
export function parseScopes(json: string | undefined): ReleaseScope[] {
  if (!json) return [];
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) throw new Error('release scopes must be a JSON list');
  return parsed.map((entry, i) => {
    const e = entry as { principal?: unknown; labels?: unknown };
    const labelsOk = e.labels === '*' || (Array.isArray(e.labels) && e.labels.every((l) => typeof l === 'string'));
    if (typeof e.principal !== 'string' || !labelsOk) throw new Error(`release scope ${i} must be { principal: string, labels: string[] | '*' }`);
    return { principal: e.principal, labels: e.labels as ReleaseScope['labels'] };
  });
}
