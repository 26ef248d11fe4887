/**
 * The entry of dist/bundle/serve.cjs, the bundle bin/regbridge.js runs for `regbridge serve ...`
 * through V8's code cache (bin/code-cache.js; docs/decisions.md, "serve starts from a code
 * cache"). The same command line as cli/main.ts; a script, not an ES module, because node 20 can
 * give cached code only to a vm.Script.
 */
import { runCommandLine } from './program.ts';

export function main(): Promise<void> {
  return runCommandLine(process.argv);
}
