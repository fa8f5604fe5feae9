/**
 * The ElastiCache IAM auth token pinned against botocore's presigner (Debian's python3-botocore, run as
 * /usr/bin/python3): for fixed credentials and a fixed time both must give the same bytes, for a serverless
 * cache and a replication group, with and without a session token.
 */
import { execFileSync } from 'node:child_process';
import { iamAuthToken } from '../../src/runtime/iam-token';

const PYTHON = '/usr/bin/python3';
const DATE = new Date('2026-03-04T05:06:07Z');

/** botocore's SigV4QueryAuth with `datetime.utcnow` pinned to DATE. */
const BOTOCORE = `
import datetime, json, sys
import botocore.auth
from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
a = json.loads(sys.argv[1])
class Fixed(datetime.datetime):
    @classmethod
    def utcnow(cls):
        return datetime.datetime(2026, 3, 4, 5, 6, 7)
botocore.auth.datetime = type('m', (), {'datetime': Fixed})
params = {'Action': 'connect', 'User': a['user']}
if a['serverless']:
    params['ResourceType'] = 'ServerlessCache'
req = AWSRequest(method='GET', url='http://' + a['cache'] + '/', params=params)
SigV4QueryAuth(Credentials(a['key'], a['secret'], a.get('token')), 'elasticache', a['region'], expires=900).add_auth(req)
print(req.url[len('http://'):])
`;

interface SignArgs { cache: string; user: string; region: string; key: string; secret: string; token?: string; serverless: boolean }

function botocoreToken(args: SignArgs): string {
  return execFileSync(PYTHON, ['-c', BOTOCORE, JSON.stringify(args)], { encoding: 'utf8' }).trim();
}

const cases = [
  { name: 'serverless cache, session credentials (Lambda)', serverless: true, token: 'IQoJb3JpZ2luX2VjE/+token==' },
  { name: 'replication group, long-term keys', serverless: false, token: undefined },
];

test.each(cases)('equals botocore byte for byte: $name', ({ serverless, token }) => {
  // GIVEN fixed credentials, cache, user and time
  const args = {
    cache: 'prompts-cache',
    user: 'prompt-reader-a1b2',
    region: 'eu-west-1',
    key: 'AKIDEXAMPLE',
    secret: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    token,
    serverless,
  };
  // WHEN both sign
  const ours = iamAuthToken({
    cacheName: args.cache,
    userId: args.user,
    region: args.region,
    serverless,
    credentials: { accessKeyId: args.key, secretAccessKey: args.secret, sessionToken: token },
    date: DATE,
  });
  // THEN the tokens are identical, and have the documented shape
  expect(ours).toBe(botocoreToken(args));
  expect(ours.startsWith(`prompts-cache/?Action=connect&User=prompt-reader-a1b2${serverless ? '&ResourceType=ServerlessCache' : ''}&X-Amz-Algorithm=AWS4-HMAC-SHA256`)).toBe(true);
  expect(ours).toContain('X-Amz-Date=20260304T050607Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host');
  expect(ours).toMatch(/&X-Amz-Signature=[0-9a-f]{64}$/);
});

test('a different second gives a different signature (the date is signed)', () => {
  const base = { cacheName: 'c', userId: 'u', region: 'us-east-1', serverless: true, credentials: { accessKeyId: 'A', secretAccessKey: 'S' } };
  expect(iamAuthToken({ ...base, date: DATE })).not.toBe(iamAuthToken({ ...base, date: new Date(DATE.getTime() + 1000) }));
});
