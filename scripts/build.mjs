// `npm run build`: a clean dist/ from tsconfig.build.json (JS, declarations, source maps), plus
// the files the code reads at run time that tsc does not emit (the controller's dashboard page).
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const ASSETS = ['controller/dashboard'];

rmSync('dist', { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
} catch (error) {
  process.exit(error.status ?? 1); // tsc printed the errors
}
for (const dir of ASSETS) cpSync(dir, `dist/${dir}`, { recursive: true });
