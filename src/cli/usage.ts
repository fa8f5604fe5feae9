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
