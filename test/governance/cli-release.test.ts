import { OPERATOR, auditRows, labelRow, useGovernance } from './fixture';
import { FunctionUrlStandIn } from './function-url-stand-in';
import { ExitCode } from '../../src/cli/main';
import { serve } from '../../src/governance/release.lambda';
import { cli, useLocalEndpoint } from '../admin/cli-runner';
import { syncVersions } from '../admin/fixture';

const fx = useGovernance();
const { table } = fx;
useLocalEndpoint();

let url: FunctionUrlStandIn;
beforeAll(async () => {
  // The CLI signs with the standard environment's credentials (the tests' `local` key): here, the operator.
  const operator = { accessKeyId: process.env.AWS_ACCESS_KEY_ID!, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY!, arn: OPERATOR };
  url = await new FunctionUrlStandIn([operator], (event) => serve(event, fx.engine, [])).start();
});
afterAll(async () => {
  await url.stop();
});

describe('cdk-prompt-serving label / rollout / history --audit', () => {
  test('label set, rollout start, step, abort, then history --audit shows the trail', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    const base = ['--table', table.tableName, '--prompt', 'greeting', '--label', 'production', '--url', url.url];
    // WHEN
    const set = await cli('label', 'set', ...base, '--version', '1', '--reason', 'first release');
    fx.clock.ms += 1_000;
    const start = await cli('rollout', 'start', ...base, '--version', '2', '--percent', '10', '--steps', '50,100', '--interval', '600');
    fx.clock.ms += 1_000;
    const step = await cli('rollout', 'step', ...base);
    fx.clock.ms += 1_000;
    const abort = await cli('rollout', 'abort', ...base, '--reason', 'error rate up');
    const history = await cli('history', '--table', table.tableName, '--audit', 'greeting');
    const json = await cli('history', '--table', table.tableName, '--audit', 'greeting', '--limit', '1', '--json');
    // THEN
    expect(set).toEqual({ code: ExitCode.ok, stdout: "label 'production' of prompt 'greeting' serves version 1.\n", stderr: '' });
    expect(start).toEqual({ code: ExitCode.ok, stdout: "Rollout of version 2 on label 'production' of prompt 'greeting' at 10 %; next step due 2026-12-01T18:10:01.000Z.\n", stderr: '' });
    expect(step.stdout).toBe("Rollout of version 2 on label 'production' of prompt 'greeting' at 50 %; next step due 2026-12-01T18:10:02.000Z.\n");
    expect(abort.stdout).toBe("Aborted: label 'production' of prompt 'greeting' serves version 1 to everyone.\n");
    expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ version_number: 1, moved_by: OPERATOR });
    const lines = history.stdout.split('\n');
    expect(lines[0]).toBe("Prompt 'greeting': audit trail, newest first.");
    expect(lines[2]).toMatch(/^AT +ACTION +TARGET +FROM +TO +ACTOR +REASON$/);
    expect(lines[3]).toMatch(new RegExp(`^2026-12-01T18:00:03.000Z +rollout-abort 0% +production +2 +1 +${OPERATOR.replace(/[/]/g, '\\/')} +error rate up$`));
    expect(lines.slice(3, 7).map((l) => l.split(/ {2,}/)[1])).toEqual(['rollout-abort 0%', 'rollout-step 50%', 'rollout-start 10%', 'label']);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ action: 'rollout-abort', target: 'production', fromVersion: 2, toVersion: 1, actor: OPERATOR })]);
    expect(await auditRows(table, 'greeting')).toHaveLength(4);
  });

  test.each([
    [['label'], /label needs a subcommand \(set\)/],
    [['rollout', 'jump'], /unknown command 'rollout jump'/],
    [['rollout', 'start', '--table', 't', '--prompt', 'p', '--label', 'l', '--version', '2', '--percent', 'ten'], /--percent must be a percent such as 10 or 2.5, got 'ten'/],
    [['rollout', 'start', '--table', 't', '--prompt', 'p', '--label', 'l', '--version', '2', '--percent', '5', '--interval', '30'], /--interval must be a whole number from 60 to 604800, got '30'/],
    [['history', '--table', 't'], /history needs --audit/],
  ])('%p is a usage error', async (argv, message) => {
    const run = await cli(...argv);
    expect(run.code).toBe(ExitCode.usage);
    expect(run.stderr).toMatch(message);
  });

  test('a refusal of the release function exits 1 with its reason; without a URL it says how to give one', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one']);
    const saved = process.env.PROMPT_SERVING_RELEASE_URL;
    delete process.env.PROMPT_SERVING_RELEASE_URL;
    // WHEN
    const refused = await cli('label', 'set', '--table', table.tableName, '--prompt', 'greeting', '--label', 'current', '--version', '1', '--url', url.url);
    const noUrl = await cli('label', 'set', '--table', table.tableName, '--prompt', 'greeting', '--label', 'production', '--version', '1');
    if (saved !== undefined) process.env.PROMPT_SERVING_RELEASE_URL = saved;
    // THEN
    expect(refused).toEqual({ code: ExitCode.failed, stdout: '', stderr: "error: `label`: label name 'current' is reserved (current, latest)\n" });
    expect(noUrl.code).toBe(ExitCode.failed);
    expect(noUrl.stderr).toMatch(/pass `releaseUrl` \(PromptServingTable.releaseFunctionUrl\) or set PROMPT_SERVING_RELEASE_URL/);
  });
});
