/**
 * One local HTTP server speaking the three AWS APIs the governance functions call, for the real SDK clients
 * pointed at it by `endpoint` (or `AWS_ENDPOINT_URL_LAMBDA` / `_EVENTBRIDGE` / `_CLOUDWATCH` for a bundled handler):
 * - Lambda `Invoke` (REST-JSON, `POST /2015-03-31/functions/{name}/invocations`): the activation gate, answering
 *   what `gate` returns (a payload, a function error, or nothing before a delay);
 * - EventBridge `PutEvents` (JSON 1.1, `X-Amz-Target: AWSEvents.PutEvents`): every entry kept, calls counted;
 * - CloudWatch `DescribeAlarms` (JSON 1.0, `X-Amz-Target: GraniteServiceVersion20100801.DescribeAlarms`):
 *   answered from `alarmStates`.
 * Loopback only.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GateAnswer {
  /** The payload the gate function returns (JSON-encoded unless a string). */
  readonly payload?: unknown;
  /** Set `X-Amz-Function-Error` (the function raised). */
  readonly functionError?: string;
  /** Wait this long before answering (a gate that times out). */
  readonly delayMs?: number;
}

export interface PutEventsEntry {
  readonly Source: string;
  readonly DetailType: string;
  readonly Detail: string;
  readonly Time?: number;
}

export class AwsStandIns {
  endpoint = '';
  readonly gateCalls: any[] = [];
  readonly putEventsCalls: PutEventsEntry[][] = [];
  /** Alarm name → state (`OK`, `ALARM`, `INSUFFICIENT_DATA`). */
  readonly alarmStates = new Map<string, string>();
  /** Alarms the caller may not describe: a DescribeAlarms naming any of them fails whole with AccessDenied, as IAM does. */
  readonly deniedAlarms = new Set<string>();
  describeAlarmsCalls = 0;
  private server?: http.Server;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** What the gate answers; receives the candidate the release engine sent. */
  // eslint-disable-next-line @typescript-eslint/member-ordering
  gate: (candidate: any) => GateAnswer = () => ({ payload: { allow: true, reason: 'ok' } });

  get events(): any[] {
    return this.putEventsCalls.flat().map((e) => ({ ...e, detail: JSON.parse(e.Detail) }));
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.route(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.endpoint = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  reset(): void {
    this.gateCalls.length = 0;
    this.putEventsCalls.length = 0;
    this.describeAlarmsCalls = 0;
    this.deniedAlarms.clear();
    this.gate = () => ({ payload: { allow: true, reason: 'ok' } });
  }

  private route(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
    const target = String(req.headers['x-amz-target'] ?? '');
    if (req.method === 'POST' && /^\/2015-03-31\/functions\/[^/]+\/invocations$/.test(req.url ?? '')) return this.invoke(body, res);
    if (target === 'AWSEvents.PutEvents') return this.putEvents(body, res);
    if (target === 'GraniteServiceVersion20100801.DescribeAlarms') return this.describeAlarms(body, res);
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ __type: 'UnknownOperationException', message: `stand-in: ${req.method} ${req.url} ${target}` }));
  }

  private invoke(body: string, res: http.ServerResponse): void {
    const candidate = JSON.parse(body);
    this.gateCalls.push(candidate);
    const answer = this.gate(candidate);
    const send = () => {
      if (res.destroyed) return;
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-amz-executed-version': '$LATEST' };
      if (answer.functionError) headers['x-amz-function-error'] = answer.functionError;
      res.writeHead(200, headers);
      res.end(typeof answer.payload === 'string' ? answer.payload : JSON.stringify(answer.payload ?? null));
    };
    if (answer.delayMs) {
      const t = setTimeout(() => { this.timers.delete(t); send(); }, answer.delayMs);
      this.timers.add(t);
    } else {
      send();
    }
  }

  private putEvents(body: string, res: http.ServerResponse): void {
    const entries = JSON.parse(body).Entries as PutEventsEntry[];
    this.putEventsCalls.push(entries);
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
    res.end(JSON.stringify({ FailedEntryCount: 0, Entries: entries.map((_, i) => ({ EventId: `event-${this.putEventsCalls.length}-${i}` })) }));
  }

  private describeAlarms(body: string, res: http.ServerResponse): void {
    this.describeAlarmsCalls++;
    const request = JSON.parse(body) as { AlarmNames?: string[]; StateValue?: string };
    const names = request.AlarmNames ?? [...this.alarmStates.keys()];
    const denied = names.find((n) => this.deniedAlarms.has(n));
    if (denied !== undefined) {
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify({ __type: 'AccessDenied', message: `not authorized to perform cloudwatch:DescribeAlarms on alarm ${denied}` }));
      return;
    }
    const alarms = names
      .filter((n) => this.alarmStates.has(n))
      .filter((n) => request.StateValue === undefined || this.alarmStates.get(n) === request.StateValue)
      .map((n) => ({ AlarmName: n, AlarmArn: `arn:aws:cloudwatch:us-east-1:111122223333:alarm:${n}`, StateValue: this.alarmStates.get(n) }));
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
    res.end(JSON.stringify({ MetricAlarms: alarms, CompositeAlarms: [] }));
  }
}
