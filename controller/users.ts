/**
 * Who may use the controller service and with which role (docs/controller.md, "Users and
 * roles"): `--user NAME:PASSWORD[:ROLE[:SCOPE]]` and `--users FILE` lines
 * `NAME:PASSWORD-OR-HASH:ROLE[:SCOPE]`. A password may contain `:`, so the optional fields are
 * taken from the right: a last field of the form `group=...`/`store=...` is the scope, a last
 * field that names a role is the role; what lies between the first colon and them is the password.
 */
import { readFileSync } from 'node:fs';
import { ID_PATTERN } from '../bridge/contract/topics.ts';
import { passwordProblem } from '../src/auth/credentials.ts';
import { hasControlCharacters } from '../src/control-characters.ts';

export const ROLES = ['viewer', 'operator', 'author', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** Registers an operator may target: those in one of the groups, or of one of the stores. */
export interface Scope {
  kind: 'group' | 'store';
  values: string[];
}

export interface ControllerUser {
  name: string;
  /** A literal password or a `regbridge hash-password` hash (always a hash, never a literal). */
  password: string;
  role: Role;
  scope?: Scope;
}

/** Thrown for a malformed user spec or users file; the message never contains a password. */
export class ControllerUserError extends Error {
  override readonly name = 'ControllerUserError';
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** `group=G1,G2` or `store=S1,S2`; undefined when `text` is not shaped like a scope at all. */
export function parseScope(text: string): Scope | string | undefined {
  const match = /^(group|store)=(.*)$/.exec(text);
  if (!match) return undefined;
  const values = match[2]!.split(',').map((v) => v.trim());
  const bad = values.find((v) => !ID_PATTERN.test(v));
  if (bad !== undefined)
    return `scope ${match[1]}=: ${JSON.stringify(bad)} is not a valid id ([A-Za-z0-9_-]{1,64})`;
  return { kind: match[1] as Scope['kind'], values: [...new Set(values)] };
}

/** The scope as written in a users file (`group=front,back`), as `GET /api/me` shows it. */
export function scopeText(scope: Scope): string {
  return `${scope.kind}=${scope.values.join(',')}`;
}

/**
 * One `NAME:PASSWORD[:ROLE[:SCOPE]]`. `roleRequired` (users files): the role must be given.
 * ROLE defaults to admin on the command line (a single `--user` keeps working as before).
 */
export function parseControllerUser(spec: string, options: { roleRequired?: boolean } = {}): ControllerUser {
  const fields = spec.split(':');
  const name = fields.shift() ?? '';
  if (name === '' || fields.length === 0) {
    throw new ControllerUserError('expected NAME:PASSWORD[:ROLE[:SCOPE]] (neither name nor password empty)');
  }
  if (name.length > 256 || hasControlCharacters(name)) {
    throw new ControllerUserError(`user name ${JSON.stringify(name)} is not valid`);
  }
  let scope: Scope | undefined;
  let role: Role | undefined;
  if (fields.length >= 3 || (fields.length === 2 && parseScope(fields.at(-1)!) !== undefined)) {
    const parsed = parseScope(fields.at(-1)!);
    if (typeof parsed === 'string') throw new ControllerUserError(`user ${name}: ${parsed}`);
    if (parsed) {
      scope = parsed;
      fields.pop();
    }
  }
  if (fields.length >= 2 && isRole(fields.at(-1)!)) role = fields.pop() as Role;
  else if (scope || options.roleRequired) {
    const given = fields.length >= 2 ? JSON.stringify(fields.at(-1)) : 'none';
    throw new ControllerUserError(`user ${name}: role ${given} is not one of ${ROLES.join(', ')}`);
  }
  const password = fields.join(':');
  const problem = passwordProblem(password);
  if (problem) throw new ControllerUserError(`user ${name}: ${problem}`);
  if (scope && role !== 'operator') {
    // Only an operator's targets are limited (docs/controller.md); a scope elsewhere misleads.
    throw new ControllerUserError(`user ${name}: a scope applies to the operator role only`);
  }
  return { name, password, role: role ?? 'admin', ...(scope && { scope }) };
}

/** Reads a users file: one user per line, `#` comments and blank lines skipped; errors name the line. */
export function loadControllerUsersFile(path: string): ControllerUser[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ControllerUserError(`cannot read users file ${path} (${code})`);
  }
  const users: ControllerUser[] = [];
  const seen = new Set<string>();
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    let user: ControllerUser;
    try {
      user = parseControllerUser(line, { roleRequired: true });
    } catch (error) {
      throw new ControllerUserError(`${path}:${index + 1}: ${(error as Error).message}`);
    }
    if (seen.has(user.name))
      throw new ControllerUserError(`${path}:${index + 1}: user ${user.name} appears twice`);
    seen.add(user.name);
    users.push(user);
  }
  return users;
}

/** Same entry: password (or hash) text, role and scope. */
function sameUser(a: ControllerUser, b: ControllerUser): boolean {
  const scope = (u: ControllerUser): string => (u.scope ? scopeText(u.scope) : '');
  return a.password === b.password && a.role === b.role && scope(a) === scope(b);
}

/** A user as code gives it (tests, the demo): without a role, an admin. */
export type UserInput = Omit<ControllerUser, 'role'> & { role?: Role | undefined };

export function withRole(user: UserInput): ControllerUser {
  return { ...user, role: user.role ?? 'admin' };
}

type ReplaceListener = (users: readonly ControllerUser[], gone: readonly string[]) => void;

/** The users by name, replaced whole by a reload; listeners (the API's logins) follow. */
export class ControllerUsers {
  #users = new Map<string, ControllerUser>();
  readonly #listeners: ReplaceListener[] = [];

  constructor(users: readonly UserInput[]) {
    this.#users = new Map(users.map((u) => [u.name, withRole(u)]));
  }

  onReplace(listener: ReplaceListener): void {
    this.#listeners.push(listener);
  }

  get(name: string): ControllerUser | undefined {
    return this.#users.get(name);
  }

  all(): ControllerUser[] {
    return [...this.#users.values()];
  }

  /**
   * Takes the new list; answers the names removed or changed, whose tokens the listeners end.
   * A listener that throws (a malformed hash) leaves the users as they were.
   */
  replace(users: readonly ControllerUser[]): string[] {
    const next = new Map(users.map((u) => [u.name, u]));
    const gone = [...this.#users.values()]
      .filter((old) => {
        const now = next.get(old.name);
        return now === undefined || !sameUser(old, now);
      })
      .map((u) => u.name);
    for (const listener of this.#listeners) listener(users, gone);
    this.#users = next;
    return gone;
  }
}
