/**
 * Timers shared by everything due at the same millisecond: a job's submissions share its deadline,
 * so one or two timers serve hundreds of registers instead of one each.
 */
export class DueTimers<T> {
  private readonly slots = new Map<number, { timer: NodeJS.Timeout; items: Set<T> }>();
  private readonly fire: (item: T) => void;

  constructor(fire: (item: T) => void) {
    this.fire = fire;
  }

  /** Calls `fire(item)` at epoch ms `due` (at once if it has passed), unless deleted before. */
  add(item: T, due: number): void {
    let slot = this.slots.get(due);
    if (!slot) {
      const items = new Set<T>();
      const timer = setTimeout(
        () => {
          // Each leaves the set before it fires, so what fire() deletes meanwhile never fires.
          for (const each of items) {
            items.delete(each);
            this.fire(each);
          }
          if (this.slots.get(due)?.items === items) this.slots.delete(due);
        },
        Math.max(0, due - Date.now()),
      );
      slot = { timer, items };
      this.slots.set(due, slot);
    }
    slot.items.add(item);
  }

  delete(item: T, due: number): void {
    const slot = this.slots.get(due);
    if (!slot?.items.delete(item) || slot.items.size > 0) return;
    clearTimeout(slot.timer);
    this.slots.delete(due);
  }

  get size(): number {
    return this.slots.size;
  }

  clear(): void {
    for (const { timer } of this.slots.values()) clearTimeout(timer);
    this.slots.clear();
  }
}
