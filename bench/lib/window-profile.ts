/**
 * A CPU profile of one window of a worker's life (one fan-out, not the start-up), through the
 * inspector: `profile-start` and `profile-stop` messages (lib/scale-fleet.ts sends them when
 * BENCH_PROFILE_DIR is set). The .cpuprofile is read with bench/profile-top.ts.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

let session: Session | undefined;

export async function startWindowProfile(): Promise<void> {
  session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
}

export async function stopWindowProfile(file: string): Promise<void> {
  if (!session) return;
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(file, JSON.stringify(profile));
  session.disconnect();
  session = undefined;
}
