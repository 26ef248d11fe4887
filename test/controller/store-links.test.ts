/** StoreLinks (controller/store-links.ts): each store's link as its bridge notifications say. */
import { expect, it } from 'vitest';
import { StoreLinks } from '../../controller/store-links.ts';

const at = new Date('2026-11-27T12:00:00Z');

it('reads 1/0, true/false, online/offline and {"online"}; a zero-byte message forgets the store', () => {
  const links = new StoreLinks();
  expect(links.apply('s1', Buffer.from('1'), at)).toBe(true);
  expect(links.apply('s1', Buffer.from('online'), at)).toBe(false);
  expect(links.apply('s1', Buffer.from('{"online":false}'), at)).toBe(true);
  expect(links.apply('s2', Buffer.from('maybe'), at)).toBe(false);
  expect([...links.all()]).toEqual([['s1', { up: false, at: at.toISOString() }]]);
  expect(links.apply('s1', Buffer.alloc(0), at)).toBe(true);
  expect(links.all().size).toBe(0);
});

it('keeps at most maxStores stores: one more is ignored, the known ones still change', () => {
  const links = new StoreLinks(2);
  links.apply('s1', Buffer.from('1'), at);
  links.apply('s2', Buffer.from('1'), at);
  expect(links.apply('s3', Buffer.from('1'), at)).toBe(false);
  expect([...links.all().keys()]).toEqual(['s1', 's2']);
  expect(links.apply('s2', Buffer.from('0'), at)).toBe(true);
  links.apply('s1', Buffer.alloc(0), at);
  expect(links.apply('s3', Buffer.from('1'), at)).toBe(true);
});
