// What the page knows: filled from the HTTP API once, then only from the event stream.

export const TOKEN_KEY = 'regbridge.token';

export const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  devices: new Map(),
  /** GET /api/stores: empty with one store; the Stores page is offered only with several. */
  stores: [],
  jobs: new Map(),
  results: new Map(),
  /** Jobs whose full result list was read (the table shows results only then). */
  loaded: new Set(),
  /** Library scripts by id (names for jobs started from them). */
  scripts: new Map(),
  /** The session's user and role (GET /api/me): which actions are offered. */
  me: { user: '', role: 'viewer' },
  events: null,
};

const MAY = {
  operate: ['operator', 'admin'],
  author: ['author', 'admin'],
  approve: ['approver', 'admin'],
  admin: ['admin'],
};

/** Whether the session's role may do `action` (the API refuses it anyway). */
export const may = (action) => MAY[action].includes(state.me.role);
