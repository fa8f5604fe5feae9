import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { invalidProp } from './errors';
import { PROMPT_FILE_EXTENSIONS } from '../schema';
import { scanPromptDirectory } from '../sync/sources/directory';

/** Where the prompts layer puts the directory in the sync function (layers are extracted to `/opt`). */
export const PROMPTS_MOUNT_PATH = '/opt/prompts';

const ARGUMENT = 'PromptSource.fromDirectory(path)';

/**
 * The prompt files of a directory, as sorted POSIX paths relative to it, by the sync handler's own scan
 * (`scanPromptDirectory`: schema.ts `isPromptFile`, `isSkippedEntry`; dangling and looping links left out, and
 * reported by the synth-time check). Exactly these are fingerprinted and shipped.
 */
export function listPromptFiles(dir: string): string[] {
  return scanPromptDirectory(dir).files;
}

/** Fails at synth unless `dir` is a directory holding at least one prompt file. */
export function validatePromptDirectory(dir: string): void {
  if (!fs.existsSync(dir)) {
    throw invalidProp(ARGUMENT, 'be an existing directory', dir,
      'Create it, or pass the folder that holds your prompt files (relative paths start at the CDK app\'s working directory)');
  }
  if (!fs.statSync(dir).isDirectory()) {
    throw invalidProp(ARGUMENT, 'be a directory', dir, 'Pass the folder that holds this file');
  }
  if (listPromptFiles(dir).length === 0) {
    throw invalidProp(ARGUMENT, `contain at least one ${PROMPT_FILE_EXTENSIONS.join(', ')} prompt file`, dir,
      'Add a prompt file such as greeting.md (README.md and names starting with \'.\' or \'_\' do not count)');
  }
}

/**
 * SHA-256 over the sorted relative paths and bytes of every file: changes exactly when the shipped content
 * changes, so a deploy that changes the directory re-syncs it and one that does not leaves it alone.
 */
export function fingerprintPromptDirectory(dir: string): string {
  const hash = createHash('sha256');
  for (const file of listPromptFiles(dir)) {
    const bytes = fs.readFileSync(path.join(dir, file));
    hash.update(`${file}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest('hex');
}

/**
 * Layer code holding the directory under `prompts/`, so the files land at {@link PROMPTS_MOUNT_PATH}.
 * Staged by copying the listed files at synth; no Docker needed.
 */
export function promptLayerCode(dir: string, fingerprint: string): lambda.Code {
  return lambda.Code.fromAsset(dir, {
    assetHash: fingerprint,
    assetHashType: AssetHashType.CUSTOM,
    bundling: {
      // Required by the type, never pulled: local bundling below always succeeds.
      image: DockerImage.fromRegistry('scratch'),
      local: {
        tryBundle(outputDir: string): boolean {
          for (const file of listPromptFiles(dir)) {
            const target = path.join(outputDir, path.basename(PROMPTS_MOUNT_PATH), file);
            fs.mkdirSync(path.dirname(target), { recursive: true });
            fs.copyFileSync(path.join(dir, file), target);
          }
          return true;
        },
      },
    },
  });
}
