/**
 * Library scripts' parameters (docs/controller.md, "Script library"): a body holds `{{name}}`
 * placeholders, each declared with a type (string, integer, enum), optional `values`, `pattern`,
 * `required` and `default`. Rendering reports every problem at once and never lets a value add
 * a line: a value holding CR or LF is refused, whatever its type.
 */

export type ParamType = 'string' | 'integer' | 'enum';

export interface ParamSpec {
  name: string;
  type: ParamType;
  values?: string[];
  pattern?: string;
  required?: boolean;
  default?: string | number;
}

export interface Problem {
  line?: number;
  message: string;
}

/** `{{ name }}`; spaces inside the braces are allowed. */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
export const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Longest rendered value: a parameter is a word or a line's worth, not a file. */
export const MAX_VALUE_LENGTH = 1000;

/** The placeholders of `body` with the line each first appears on. */
export function placeholders(body: string): Map<string, number> {
  const found = new Map<string, number>();
  body.split(/\r?\n/).forEach((text, index) => {
    for (const match of text.matchAll(PLACEHOLDER)) {
      if (!found.has(match[1]!)) found.set(match[1]!, index + 1);
    }
  });
  return found;
}

function compiled(pattern: string): RegExp | undefined {
  try {
    // Anchored: the whole value must match, not a part of it.
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch {
    return undefined;
  }
}

/** Why `value` is not a valid value of `param`, or undefined; `text` is its rendered form. */
function valueProblem(param: ParamSpec, value: unknown): { problem?: string; text?: string } {
  const what = `parameter ${param.name}`;
  if (param.type === 'integer') {
    const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
    if (!/^-?\d{1,15}$/.test(text))
      return { problem: `${what} must be an integer, got ${JSON.stringify(value)}` };
    return { text: String(Number(text)) };
  }
  if (typeof value !== 'string') return { problem: `${what} must be a string, got ${JSON.stringify(value)}` };
  if (/[\r\n]/.test(value)) return { problem: `${what} must not contain a line break (CR or LF)` };
  if (value.length > MAX_VALUE_LENGTH)
    return { problem: `${what} is longer than ${MAX_VALUE_LENGTH} characters` };
  if (param.type === 'enum' && !(param.values ?? []).includes(value)) {
    return {
      problem: `${what} must be one of ${(param.values ?? []).join(', ')}, got ${JSON.stringify(value)}`,
    };
  }
  if (param.pattern !== undefined && !compiled(param.pattern)?.test(value)) {
    return { problem: `${what} does not match the pattern ${param.pattern}` };
  }
  return { text: value };
}

/** Problems of a script's definition (at save): names, types, values, patterns, defaults, placeholders. */
export function definitionProblems(body: string, params: readonly ParamSpec[]): Problem[] {
  const problems: Problem[] = [];
  const names = new Set<string>();
  for (const param of params) {
    if (!PARAM_NAME.test(param.name))
      problems.push({
        message: `parameter name ${JSON.stringify(param.name)} is not valid ([A-Za-z_][A-Za-z0-9_]*)`,
      });
    if (names.has(param.name)) problems.push({ message: `parameter ${param.name} is declared twice` });
    names.add(param.name);
    if (param.type === 'enum' && !param.values?.length)
      problems.push({ message: `parameter ${param.name}: an enum needs values` });
    if (param.type !== 'enum' && param.values !== undefined)
      problems.push({ message: `parameter ${param.name}: values apply to an enum only` });
    if (param.pattern !== undefined && (param.type === 'integer' || !compiled(param.pattern))) {
      problems.push({
        message: `parameter ${param.name}: pattern ${JSON.stringify(param.pattern)} is not a valid regular expression for a string`,
      });
    }
    if (param.default !== undefined) {
      const { problem } = valueProblem(param, param.default);
      if (problem) problems.push({ message: `default of ${problem}` });
    }
  }
  for (const [name, line] of placeholders(body)) {
    if (!names.has(name))
      problems.push({ line, message: `placeholder {{${name}}} is not a declared parameter` });
  }
  return problems;
}

/**
 * The body with every placeholder replaced, or every problem: a required parameter missing, a
 * value of the wrong type, not in `values`, not matching `pattern`, holding CR or LF; a
 * parameter given that is not declared; a placeholder that is not declared.
 */
export function renderScript(
  body: string,
  params: readonly ParamSpec[],
  given: Readonly<Record<string, unknown>>,
): { script: string; problems: [] } | { script?: undefined; problems: Problem[] } {
  const problems: Problem[] = [];
  const declared = new Map(params.map((p) => [p.name, p]));
  const texts = new Map<string, string>();
  for (const name of Object.keys(given)) {
    if (!declared.has(name)) problems.push({ message: `parameter ${name} is not declared by the script` });
  }
  for (const param of params) {
    const value = Object.hasOwn(given, param.name) ? given[param.name] : param.default;
    if (value === undefined) {
      if (param.required !== false && param.default === undefined) {
        problems.push({ message: `parameter ${param.name} is required` });
      } else texts.set(param.name, '');
      continue;
    }
    const { problem, text } = valueProblem(param, value);
    if (problem) problems.push({ message: problem });
    else texts.set(param.name, text!);
  }
  for (const [name, line] of placeholders(body)) {
    if (!declared.has(name))
      problems.push({ line, message: `placeholder {{${name}}} is not a declared parameter` });
  }
  if (problems.length > 0) return { problems };
  return { script: body.replace(PLACEHOLDER, (_all, name: string) => texts.get(name)!), problems: [] };
}
