/**
 * git over HTTP for tests, the way the host runner does it: no credential helper, no prompt, no
 * global or system config, and the `Authorization` header only in the command's environment
 * (`GIT_CONFIG_*` → `http.extraHeader`).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Runs git in `cwd` with `header` (a full `Authorization` value) when given; resolves with stdout, rejects with git's stderr. */
export async function gitWithHeader(cwd: string, args: string[], header?: string): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true',
    GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@example.test', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@example.test',
  };
  if (header) Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: ${header}` });
  try {
    const { stdout } = await execFileAsync('git', args, { cwd, env });
    return stdout;
  } catch (err) {
    throw new Error(`git ${args[0]} failed: ${String((err as { stderr?: string }).stderr ?? (err as Error).message)}`, { cause: err });
  }
}
