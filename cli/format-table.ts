/**
 * Plain-text tables of the controller commands: fan-out results (`fanout`, `demo`) and the
 * device directory (`watch`). Pure functions of their input; no colours, so output is the same
 * on a TTY, in a pipe and in a test.
 */
import type { DeviceEntry, FanoutResult, FanoutSummary, TaskView } from '../controller/types.ts';

/**
 * Reports and errors come from devices: control characters (ANSI escapes among them: OSC 52
 * clipboard writes, clear-screen) are shown as `?` so a device cannot rewrite the operator's
 * terminal. `keepLines` (a whole report, `regbridge run`): line breaks and tabs stay, a CR LF is
 * a line break, a lone CR (which rewrites the line) is `?`.
 */
export function sanitize(text: string, options: { keepLines?: boolean } = {}): string {
  if (options.keepLines) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
    return text.replace(/\r\n/g, '\n').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?');
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/** The first line of a report or error, cut to `max` characters. */
export function firstLine(text: string, max = 60): string {
  const line = sanitize(text.split(/\r?\n/, 1)[0] ?? '');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes}m${Math.round((ms % 60_000) / 1000)}s`;
}

/** Columns padded to their widest cell, two spaces apart, header underlined with dashes. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

function resultDetail(result: FanoutResult): string {
  switch (result.status) {
    case 'FINISHED':
      return firstLine(result.report);
    case 'FAILURE':
      return firstLine(result.error);
    case 'OFFLINE':
      return 'not online when sent';
    case 'NO_ANSWER':
      return firstLine(result.detail);
  }
}

/** DEVICE, STATUS, TASK, DURATION, REPORT / ERROR: one row per targeted device. */
export function renderResults(results: readonly FanoutResult[]): string {
  const rows = results.map((result) => [
    result.deviceId,
    result.status,
    'taskId' in result && result.taskId !== undefined ? String(result.taskId) : '-',
    'durationMs' in result ? formatDuration(result.durationMs) : '-',
    resultDetail(result),
  ]);
  return renderTable(['DEVICE', 'STATUS', 'TASK', 'DURATION', 'REPORT / ERROR'], rows);
}

export function renderSummary(summary: FanoutSummary): string {
  const total = summary.finished + summary.failed + summary.offline + summary.noAnswer;
  return (
    `${total} device${total === 1 ? '' : 's'}: ${summary.finished} finished, ${summary.failed} failed, ` +
    `${summary.offline} offline, ${summary.noAnswer} no answer`
  );
}

export interface DeviceRow {
  entry: DeviceEntry;
  queue: { queued: number; running: number };
  /** The device's newest known task. */
  latest?: TaskView;
}

/** HH:MM:SS (UTC) on the day of `now`, the date on another day, `-` when unknown. */
function clock(iso: string | undefined, now: Date): string {
  if (!iso) return '-';
  return iso.slice(0, 10) === now.toISOString().slice(0, 10) ? iso.slice(11, 19) : iso.slice(0, 10);
}

/**
 * When the device last reported by its own clock (state `startedAt`, newest task times), not
 * when received: retained messages all arrive at once.
 */
export function reportedAt(entry: DeviceEntry, latest: TaskView | undefined): string | undefined {
  const times = [entry.startedAt, latest?.finishedAt, latest?.startedAt, latest?.queuedAt].filter(
    (t): t is string => typeof t === 'string',
  );
  return times.length ? times.reduce((a, b) => (Date.parse(b) > Date.parse(a) ? b : a)) : undefined;
}

function queueText(queue: DeviceRow['queue']): string {
  if (queue.running === 0 && queue.queued === 0) return 'idle';
  return [queue.running ? `${queue.running} running` : '', queue.queued ? `${queue.queued} queued` : '']
    .filter(Boolean)
    .join(', ');
}

function taskText(task: TaskView | undefined): string {
  if (!task) return '-';
  const status = task.phase === 'queued' ? 'QUEUED' : task.status;
  const detail =
    task.status === 'FINISHED' ? task.report : task.status === 'FAILURE' ? task.error : undefined;
  const base = `#${task.id} ${status}${task.previousBoot ? ' (previous boot)' : ''}`;
  return detail ? `${base}: ${firstLine(detail, 40)}` : base;
}

/** DEVICE, ONLINE, GROUPS, QUEUE, LAST TASK, SEEN (the device's last report, see reportedAt): the `watch` view. */
export function renderDevices(rows: readonly DeviceRow[], now: Date = new Date()): string {
  if (rows.length === 0) return '(no devices known yet)';
  return renderTable(
    ['DEVICE', 'ONLINE', 'GROUPS', 'QUEUE', 'LAST TASK', 'SEEN'],
    rows.map(({ entry, queue, latest }) => [
      entry.deviceId,
      entry.online ? 'yes' : 'no',
      entry.groups.length ? entry.groups.join(',') : '-',
      entry.online ? queueText(queue) : '-',
      taskText(latest),
      clock(reportedAt(entry, latest), now),
    ]),
  );
}
