/** The `regbridge` command line as bin/regbridge.js runs it (dist/bundle/main.js): cli/program.ts. */
import { runCommandLine } from './program.ts';

await runCommandLine(process.argv);
