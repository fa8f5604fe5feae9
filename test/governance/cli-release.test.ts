import { OPERATOR, auditRows, labelRow, useGovernance } from './fixture';
import { FunctionUrlStandIn } from './function-url-stand-in';
import { ExitCode } from '../../src/cli/main';
import { serve } from '../../src/governance/release.lambda';
import { cli, useLocalEndpoint } from '../admin/cli-runner';
import { syncVersions } from '../admin/fixture';

/** What every move prints on stderr before it calls: the client token to retry it with. */
const TOKEN_NOTE = /^client token: ([A-Za-z0-9_-]{1,64}) \(to retry this move, pass --client-token \1\)\n$/;

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
    expect(set).toEqual({ code: ExitCode.ok, stdout: "label 'production' of prompt 'greeting' serves version 1.\n", stderr: expect.stringMatching(TOKEN_NOTE) });
    expect(start).toEqual({ code: ExitCode.ok, stdout: "Rollout of version 2 on label 'production' of prompt 'greeting' at 10 % (1000 bp); next step due 2026-12-01T18:10:01.000Z.\n", stderr: expect.stringMatching(TOKEN_NOTE) });
    expect(step.stdout).toBe("Rollout of version 2 on label 'production' of prompt 'greeting' at 50 % (5000 bp); next step due 2026-12-01T18:10:02.000Z.\n");
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
    [['rollout', 'start', '--table', 't', '--prompt', 'p', '--label', 'l', '--version', '2'], /rollout start needs --percent-bp \(or --percent\)/],
    [['rollout', 'start', '--table', 't', '--prompt', 'p', '--label', 'l', '--version', '2', '--percent', '10', '--percent-bp', '1000'], /give --percent-bp or --percent, not both/],
    [['rollout', 'start', '--table', 't', '--prompt', 'p', '--label', 'l', '--version', '2', '--percent-bp', '10.5'], /--percent-bp must be whole basis points such as 1000 \(10 %\) or 250 \(2.5 %\), got '10.5'/],
    [['rollout', 'start', '--table', 't', '--prompt', 'p', '--label', 'l', '--version', '2', '--percent', '10.005'], /--percent must be a whole number of hundredths of a percent \(one basis point is 0.01 %\), got '10.005'/],
    [['rollout', 'start', '--table', 't', '--prompt', 'p', '--label', 'l', '--version', '2', '--percent', '1e-300'], /--percent must be a percent such as 10 or 2.5, got '1e-300'/],
    [['rollout', 'step', '--table', 't', '--prompt', 'p', '--label', 'l', '--percent-bp', '1000,2000'], /--percent-bp takes one share, got 2/],
    [['rollout', 'step', '--table', 't', '--prompt', 'p', '--label', 'l', '--client-token', 'not a token'], /--client-token must be 1 to 64 letters, digits, '-' or '_', got 'not a token'/],
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
    expect(refused).toEqual({ code: ExitCode.failed, stdout: '', stderr: expect.stringMatching(/^client token: \S+ .*\nerror: `label`: label name 'current' is reserved \(current, latest\)\n$/) });
    expect(noUrl.code).toBe(ExitCode.failed);
    expect(noUrl.stderr).toMatch(/pass `releaseUrl` \(PromptServingTable.releaseFunctionUrl\) or set PROMPT_SERVING_RELEASE_URL/);
  });

  test('--percent-bp and --steps-bp take basis points; --percent converts exactly (2.5 is 250 bp); the release function bounds both', async () => {
    // GIVEN
    await syncVersions(table, 'greeting', ['one', 'two']);
    const at = (label: string) => ['--table', table.tableName, '--prompt', 'greeting', '--label', label, '--url', url.url];
    await cli('label', 'set', ...at('staging'), '--version', '1');
    await cli('label', 'set', ...at('canary'), '--version', '1');
    // WHEN
    const inBp = await cli('rollout', 'start', ...at('staging'), '--version', '2', '--percent-bp', '250', '--steps-bp', '5000,10000');
    const inPercent = await cli('rollout', 'start', ...at('canary'), '--version', '2', '--percent', '2.5', '--steps', '50,100');
    const steppedInPercent = await cli('rollout', 'step', ...at('canary'), '--percent', '30.25');
    const tooMuch = await cli('rollout', 'step', ...at('staging'), '--percent-bp', '10001');
    // THEN
    expect(inBp.stdout).toBe("Rollout of version 2 on label 'staging' of prompt 'greeting' at 2.5 % (250 bp).\n");
    expect(inPercent.stdout).toBe("Rollout of version 2 on label 'canary' of prompt 'greeting' at 2.5 % (250 bp).\n");
    expect(steppedInPercent.stdout).toBe("Rollout of version 2 on label 'canary' of prompt 'greeting' at 30.25 % (3025 bp).\n");
    expect(tooMuch).toMatchObject({ code: ExitCode.failed, stderr: expect.stringMatching(/`percentBp` must be a whole number of basis points from 1 to 10000 \(0.01 % to 100 %\), got 10001/) });
    expect(await labelRow(table, 'greeting', 'staging')).toMatchObject({ rollout: { percent_bp: 250, steps_bp: [5000, 10_000] } });
    expect(await labelRow(table, 'greeting', 'canary')).toMatchObject({ rollout: { percent_bp: 3025, steps_bp: [5000, 10_000] } });
  });

  test('--client-token retries a move across invocations: the token printed by the first run, reused, moves nothing twice', async () => {
    // GIVEN a rollout at 10 %, and a CI job whose step command ran (and committed) but whose answer it never saw
    await syncVersions(table, 'greeting', ['one', 'two']);
    const base = ['--table', table.tableName, '--prompt', 'greeting', '--label', 'production', '--url', url.url];
    await cli('label', 'set', ...base, '--version', '1');
    await cli('rollout', 'start', ...base, '--version', '2', '--percent-bp', '1000', '--steps-bp', '5000,10000');
    fx.clock.ms += 1_000;
    const first = await cli('rollout', 'step', ...base);
    const printed = TOKEN_NOTE.exec(first.stderr)?.[1];
    fx.clock.ms += 1_000;
    // WHEN the job is retried with the token it printed, and a chosen token is used twice
    const retry = await cli('rollout', 'step', ...base, '--client-token', printed!);
    const chosen = await cli('rollout', 'step', ...base, '--client-token', 'ci-run-42-step');
    const chosenAgain = await cli('rollout', 'step', ...base, '--client-token=ci-run-42-step');
    // THEN the retries answer the committed moves; the rollout took each step once
    expect(first).toMatchObject({ code: ExitCode.ok, stdout: expect.stringContaining('at 50 % (5000 bp)') });
    expect(printed).toMatch(/^[0-9a-f-]{36}$/);
    expect(retry).toMatchObject({ code: ExitCode.ok, stdout: expect.stringContaining('at 50 % (5000 bp)') });
    expect(retry.stdout).toMatch(/A retry: this move had already been made \(same client token\); nothing moved now/);
    expect(retry.stderr).toBe(`client token: ${printed} (to retry this move, pass --client-token ${printed})\n`);
    expect(chosen.stdout).toContain('at 100 % (10000 bp)');
    expect(chosenAgain.stdout).toContain('at 100 % (10000 bp)');
    expect(chosenAgain.stdout).toMatch(/A retry: this move had already been made \(same client token\); nothing moved now/);
    expect(chosenAgain.stderr).toBe('client token: ci-run-42-step (to retry this move, pass --client-token ci-run-42-step)\n');
    expect(await labelRow(table, 'greeting', 'production')).toMatchObject({ rollout: { percent_bp: 10_000 } });
    const steps = (await auditRows(table, 'greeting')).filter((r) => r.action === 'rollout-step');
    expect(steps.map((r) => r.percent_bp)).toEqual([5000, 10_000]);
  });
});
