#!/usr/bin/env node
/** The `cdk-prompt-serving` executable (package.json `bin`): runs `main` on the process's arguments. */
import { main } from './main';

void main(process.argv.slice(2), process).then((code) => {
  process.exitCode = code;
});
