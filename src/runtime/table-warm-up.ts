/**
 * The cache tier's warm-up of the table's request path. A reader the L2 serves has never sent a table request, and
 * makes its first when the cache fails, together with every other reader of the fleet: the SDK's first request of an
 * operation costs several times a later one (credentials, endpoint resolution, serialization, signing, the HTTP
 * client's first request, deserialization). The warm-up runs that path once per operation a read sends, after the L2's
 * first connection, and reads nothing from the table.
 */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { TierDeps } from './tier';
import { CURRENT, PARTITION_KEY, SORT_KEY } from '../schema/keys';

/**
 * The id the warm-up's requests name (a reserved id, which no prompt has). SDK middleware on a cache reader's client
 * sees one `GetItem` and one `BatchGetItem` of it at start-up, answered inside the process.
 */
export const WARM_UP_PROMPT_ID = '#warm-up';
const WARM_UP_KEY = { [PARTITION_KEY]: { S: WARM_UP_PROMPT_ID }, [SORT_KEY]: { S: CURRENT } };
/** A pointer-shaped item in DynamoDB's JSON, so the warm-up deserializes the attribute types a read does. */
const WARM_UP_ITEM = {
  ...WARM_UP_KEY, v: { N: '2' }, on: { BOOL: true }, tags: { L: [{ S: 'a' }] }, vars: { M: { x: { S: 'y' } } }, none: { NULL: true },
};
/** How long one warm-up request may take (it never waits on the network: a server in this process answers). */
const WARM_UP_DEADLINE_MS = 1000;
/** Request headers that carry credentials: taken off before a warm-up request leaves the SDK's middleware. */
const CREDENTIAL_HEADERS = /^(authorization|x-amz-security-token)$/i;

/** The DynamoDB answers the warm-up is given, by operation. */
type Answers = Record<'GetItem' | 'BatchGetItem', string>;

/**
 * Runs `GetItem` and `BatchGetItem` (a cold read's pointer and catalog) through the core's own SDK client and command
 * classes, each answered inside the process by a middleware innermost in the command's stack (not the client's, so no
 * read of the reader's meets it), after signing:
 *
 * - through the client the core made itself (`ownClient`: the SDK's default HTTP handler), the request goes to an
 *   HTTP server on 127.0.0.1 in this process, with its signature and session token taken off first: the HTTP
 *   client's first request (agent, socket, parser, the handler's code) runs here too, not in the first table read;
 * - through a client the reader passed (its HTTP handler may be anything: a proxy, a custom transport), or when no
 *   local server can listen, the middleware answers itself and the HTTP handler is never called.
 *
 * Nothing reaches DynamoDB and no table read is counted. Sequential, each within {@link WARM_UP_DEADLINE_MS}; resolves
 * to how many ran to a deserialized answer, never rejects.
 */
export async function warmTableReads(deps: Pick<TierDeps, 'dynamoDB' | 'table' | 'ownClient'>): Promise<number> {
  const { dynamoDB, table } = deps;
  const tableName = table.tableName;
  const answers: Answers = {
    GetItem: JSON.stringify({ Item: WARM_UP_ITEM }),
    BatchGetItem: JSON.stringify({ Responses: { [tableName]: [WARM_UP_ITEM] }, UnprocessedKeys: {} }),
  };
  const local = deps.ownClient === true ? await localServer(answers).catch(() => undefined) : undefined;
  let answered = 0;
  try {
    for (const operation of ['GetItem', 'BatchGetItem'] as const) {
      try {
        const [GetItem, BatchGetItem] = table.commands;
        const command = operation === 'GetItem'
          ? new GetItem({ TableName: tableName, Key: WARM_UP_KEY })
          : new BatchGetItem({ RequestItems: { [tableName]: { Keys: [WARM_UP_KEY, { ...WARM_UP_KEY, [SORT_KEY]: { S: 'v000001' } }] } } });
        const middleware = local === undefined ? cannedAnswer(answers[operation]) : toLocalServer(local.port);
        (command.middlewareStack as { add(middleware: unknown, options: object): void })
          .add(middleware, { step: 'deserialize', priority: 'low', name: 'promptServingWarmUp' });
        const abortSignal = AbortSignal.timeout(WARM_UP_DEADLINE_MS);
        await (dynamoDB.send as (command: unknown, options: object) => Promise<unknown>).call(dynamoDB, command, { abortSignal });
        answered++;
      } catch {
        // a warm-up that fails costs the first real request what it would have cost anyway
      }
    }
  } finally {
    local?.close();
  }
  return answered;
}

/** A middleware that answers with `body` (HTTP 200, as DynamoDB would) without calling the handler after it. */
function cannedAnswer(body: string) {
  return () => async () => ({
    response: {
      statusCode: 200,
      reason: 'OK',
      headers: responseHeaders(body),
      // A stream, as the HTTP handler gives one, so the SDK's stream collector runs too.
      body: Readable.from([Buffer.from(body)]),
    },
  });
}

/** A middleware that sends the signed request to the local server instead, its credential headers taken off. */
function toLocalServer(port: number) {
  return (next: (args: unknown) => Promise<unknown>) => async (args: { request?: WarmUpRequest }) => {
    const request = args.request;
    if (request === undefined || typeof request.headers !== 'object' || request.headers === null) throw new Error('not an HTTP request');
    request.protocol = 'http:';
    request.hostname = '127.0.0.1';
    request.port = port;
    for (const name of Object.keys(request.headers)) if (CREDENTIAL_HEADERS.test(name)) delete request.headers[name];
    return next(args);
  };
}

/** The fields of the SDK's `HttpRequest` the warm-up changes. */
interface WarmUpRequest {
  protocol: string;
  hostname: string;
  port?: number;
  headers: Record<string, string>;
}

/** An HTTP server on 127.0.0.1 (a free port) answering each operation as DynamoDB would; closed after the warm-up. */
async function localServer(answers: Answers): Promise<{ port: number; close(): void }> {
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] as keyof Answers;
    req.resume();
    req.on('end', () => {
      const body = Object.hasOwn(answers, operation) ? answers[operation] : undefined;
      if (body === undefined) {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, responseHeaders(body)).end(body);
    });
  });
  server.unref();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

function responseHeaders(body: string): Record<string, string> {
  return { 'content-type': 'application/x-amz-json-1.0', 'content-length': String(Buffer.byteLength(body)), 'x-amzn-requestid': 'warm-up' };
}
