/** The `cdk-prompt-serving` command's help text. */

/** The command's name (package.json `bin`). */
export const PROGRAM = 'cdk-prompt-serving';

export const USAGE = `Usage: ${PROGRAM} <command> --table TABLE --prompt PROMPT [options]

Inspect the prompts of a cdk-prompt-serving table and roll them back.

Commands:
  activate       Make an existing version CURRENT again (roll back or forward).
                   --version N   the version to serve (required)
                   --by NAME     recorded as activated_by on the pointer
                 The next sync keeps it while the source is unchanged; the next
                 change at the source is written as a new version and served.
  list-versions  Show the version history and which version is CURRENT.
                   --json        print it as JSON
  get            Print the CURRENT pointer as JSON.
                   --version N   print that version's item instead

Options:
  --table TABLE    name of the serving table
  --prompt PROMPT  prompt id
  -h, --help       show this help

Region, credentials and endpoint come from the standard AWS environment
(AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL_DYNAMODB, ...).

Exit codes: 0 done, 1 the operation failed, 2 usage error.
`;
