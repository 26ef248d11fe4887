// What the page knows: filled from the HTTP API once, then only from the event stream.

export const TOKEN_KEY = 'regbridge.token';

export const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  devices: new Map(),
  jobs: new Map(),
  results: new Map(),
  /** Jobs whose full result list was read (the table shows results only then). */
  loaded: new Set(),
  events: null,
};
