// The job form's checks, in the form's words (its labels and units): what the browser's own
// number constraints let through, and the API's refusals translated back to the fields.

const MAX_DEADLINE_SECONDS = 604_800;

/** [field name, label, check(value) -> problem or undefined] for the optional number fields. */
const NUMBER_CHECKS = [
  [
    'batchSize',
    'Batch size',
    (v) => (Number.isSafeInteger(v) && v >= 1 ? undefined : 'a whole number of registers, 1 or more'),
  ],
  [
    'maxPerMinute',
    'Sends per minute',
    (v) => (Number.isSafeInteger(v) && v >= 1 ? undefined : 'a whole number, 1 or more'),
  ],
  [
    'failureRatio',
    'Abort at failure ratio',
    (v) => (v >= 0 && v <= 1 ? undefined : 'a number from 0 to 1, e.g. 0.2 for 20%'),
  ],
  [
    'deadlineSeconds',
    'Deadline',
    (v) =>
      v >= 1 && v <= MAX_DEADLINE_SECONDS
        ? undefined
        : `from 1 to ${MAX_DEADLINE_SECONDS} seconds (a week); empty: 600`,
  ],
];

/** The first problem of the form's number fields, in its words; undefined when all are fine. */
export function formProblem(form) {
  for (const [name, label, check] of NUMBER_CHECKS) {
    const raw = form.elements[name].value.trim();
    if (raw === '') continue;
    const problem = check(Number(raw));
    if (problem) return { field: form.elements[name], message: `${label}: ${problem}` };
  }
  return undefined;
}

// The API's field paths, as the form names them.
const LABELS = {
  script: 'Script',
  target: 'Group or registers',
  'target.group': 'Group or registers',
  'target.devices': 'Group or registers',
  'target.stores': 'Only these stores',
  'target.attributes': 'Only registers with these attributes',
  name: 'Name',
  'rollout.batchSize': 'Batch size',
  'rollout.maxPerMinute': 'Sends per minute',
  'abort.failureRatio': 'Abort at failure ratio',
  deadlineMs: 'Deadline',
};

/** `INVALID_REQUEST: body field 'rollout.batchSize': must be ...` -> `Batch size: must be ...`. */
export function inFormWords(message) {
  const match = /^[A-Z_]+: body field '([^']+)': (.*)$/s.exec(message);
  if (!match) return message.replace(/^[A-Z_]+: /, '');
  const field = match[1].replace(/\.\d+$/, '');
  return `${LABELS[field] ?? field}: ${match[2]}`;
}
