/**
 * A first-in first-out list with O(1) push and shift (an array and a head index, compacted once
 * the consumed head is both over 1024 entries and over half the array), and removal from the
 * middle for a cancelled task. The queue's waiting tasks and its ended ids use it.
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.size > 0 ? this.items[this.head] : undefined;
  }

  shift(): T | undefined {
    if (this.size === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Removes `item` wherever it is (O(size)); false when it is not there. */
  remove(item: T): boolean {
    const index = this.items.indexOf(item, this.head);
    if (index < 0) return false;
    this.items.splice(index, 1);
    return true;
  }
}
