/**
 * A local stand-in of a Lambda function URL with `AuthType: AWS_IAM`, on loopback: it verifies each request's
 * SigV4 signature (service `lambda`) against the secret of the access key it names, as Lambda does, answers
 * 403 `{"Message":"Forbidden"}` for an unknown key or a bad signature, and otherwise hands the function a
 * payload-2.0 event whose `requestContext.authorizer.iam.userArn` is the key's principal: the only identity the
 * release function believes.
 */
import { createHash, createHmac } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import type { FunctionUrlEvent, FunctionUrlResult } from '../../src/governance/release.lambda';

/** A principal the stand-in knows: its access key pair and its ARN (as STS reports it). */
export interface LocalIdentity {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly arn: string;
}

class NodeSha256 {
  private readonly hash;
  constructor(secret?: unknown) {
    this.hash = secret ? createHmac('sha256', secret as Uint8Array) : createHash('sha256');
  }
  update(data: string | Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

export class FunctionUrlStandIn {
  url = '';
  requests = 0;
  rejected = 0;
  private server?: http.Server;

  constructor(private readonly identities: readonly LocalIdentity[], private readonly fn: (event: FunctionUrlEvent) => Promise<FunctionUrlResult>) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.handle(req, Buffer.concat(chunks).toString('utf8')).then((out) => {
          res.writeHead(out.statusCode, out.headers);
          res.end(out.body);
        }, (err: unknown) => {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ Message: String(err) }));
        });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: http.IncomingMessage, body: string): Promise<FunctionUrlResult> {
    this.requests++;
    const caller = await this.verify(req, body);
    if (!caller) {
      this.rejected++;
      return { statusCode: 403, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ Message: 'Forbidden' }) };
    }
    return this.fn({
      body,
      isBase64Encoded: false,
      requestContext: { http: { method: req.method }, authorizer: { iam: { userArn: caller.arn } } },
    });
  }

  /** The identity whose key signed the request, or `undefined` when the signature does not verify. */
  private async verify(req: http.IncomingMessage, body: string): Promise<LocalIdentity | undefined> {
    const m = AUTHORIZATION.exec(String(req.headers.authorization ?? ''));
    if (!m) return undefined;
    const [, keyId, , region, service, signedHeaders, signature] = m;
    const identity = this.identities.find((i) => i.accessKeyId === keyId);
    const amzDate = String(req.headers['x-amz-date'] ?? '');
    if (!identity || service !== 'lambda' || !/^\d{8}T\d{6}Z$/.test(amzDate)) return undefined;
    const signingDate = new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
    // Lambda refuses signatures more than 15 minutes off its clock.
    if (Math.abs(Date.now() - signingDate.getTime()) > 15 * 60_000) return undefined;
    const headers: Record<string, string> = {};
    for (const name of signedHeaders.split(';')) headers[name] = String(req.headers[name] ?? '');
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    const signer = new SignatureV4({ service, region, credentials: identity, sha256: NodeSha256 as any });
    const resigned = await signer.sign(
      { method: req.method ?? 'POST', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname, query: {}, headers, body },
      { signingDate },
    );
    const expected = /Signature=([0-9a-f]{64})$/.exec(String(resigned.headers.authorization))?.[1];
    return expected === signature ? identity : undefined;
  }
}
