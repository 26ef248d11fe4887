/**
 * The entry of dist/bundle/serve.cjs, the bundle bin/regbridge.js runs for `regbridge serve ...`
 * through V8's code cache (docs/decisions/serve-code-cache.md). The same command line as
 * cli/main.ts; a script, not an ES module, because node 20 can give cached code only to a
 * vm.Script.
 */
import { runCommandLine } from './program.ts';

export function main(): Promise<void> {
  return runCommandLine(process.argv);
}
