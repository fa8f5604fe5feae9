/** The `cdk-prompt-serving` command's help text. */

/** The command's name (package.json `bin`). */
export const PROGRAM = 'cdk-prompt-serving';

export const USAGE = `Usage: ${PROGRAM} <command> [options]

Inspect the prompts of a cdk-prompt-serving table, roll them back, sync and check prompts-as-code.

Commands:
  list           --table TABLE
                 List every prompt: id, serving version, status, synced at.
                   --json        print it as JSON
  get            --table TABLE --prompt PROMPT
                 Print the CURRENT pointer as JSON (keys in sorted order).
                   --version N   print that version's item instead
  list-versions  --table TABLE --prompt PROMPT
                 Show the version history and which version is CURRENT.
                   --json        print it as JSON
  activate       --table TABLE --prompt PROMPT --version N
                 Make an existing version CURRENT again (roll back or forward).
                   --by NAME     recorded as activated_by on the pointer
                 The next sync keeps it while the source is unchanged; the next
                 change at the source is written as a new version and served.
  sync           --table TABLE --directory DIR
                 Full sync of a prompts-as-code directory into the table, with
                 the sync function's engine: changed prompts get a new version,
                 prompts no longer in DIR are marked DELETED.
  validate DIR   Check the prompt files in DIR by the rules cdk synth applies;
                 one line per problem. No AWS access.
  history        --table TABLE --audit PROMPT
                 The prompt's audit trail, newest first: every move of CURRENT
                 and of its labels, who made it, from and to which version, why.
                   --limit N     at most N records (default 50, at most 1000)
                   --json        print it as JSON

Release path (needs \`governance\` on the construct; calls the release function's
URL, signed with your AWS credentials; gated and audited):
  label set      --table TABLE --prompt PROMPT --label LABEL --version N
                 Point LABEL at version N (create or move it).
  rollout start  --table TABLE --prompt PROMPT --label LABEL --version N --percent-bp BP
                 Serve version N to BP basis points of LABEL's readers (by
                 stickiness key; 1000 bp = 10 %, 1 to 10000).
                   --percent P         the share in percent instead (2.5 = 250 bp;
                                       finer than 0.01 is refused, never rounded)
                   --steps-bp 5000,10000  later shares, rising (or --steps 50,100)
                   --interval SECS     take the steps on this schedule (60 or more)
                   --alarms A,B        abort when one of these alarms fires
  rollout step   --table TABLE --prompt PROMPT --label LABEL [--percent-bp BP]
                 Raise the share to BP (or --percent P), or to the next step.
  rollout promote --table TABLE --prompt PROMPT --label LABEL
                 LABEL serves the candidate to everyone; the rollout ends.
  rollout abort  --table TABLE --prompt PROMPT --label LABEL
                 LABEL serves its own version to everyone; the rollout ends.
  Each takes --reason TEXT (recorded in the audit record), --url URL (the
  release function's URL; default: PROMPT_SERVING_RELEASE_URL) and
  --client-token T: each move prints its client token on stderr first; run the
  same command with --client-token T to retry it (a move that had committed,
  within 24 hours, answers as before and moves nothing).
  types          (--directory DIR | --table TABLE) [--python]
                 Print typed-prompt declarations (.d.ts, or .pyi with --python).

Options:
  --table TABLE    name of the serving table
  --prompt PROMPT  prompt id
  -h, --help       show this help

A value that starts with '-' is written --name=value (e.g. --prompt=-h).
Region, credentials and endpoint come from the standard AWS environment
(AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL_DYNAMODB, ...).

Exit codes: 0 done, 1 the operation failed (or validate found problems), 2 usage error.
`;
