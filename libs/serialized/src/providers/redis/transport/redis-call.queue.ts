/** A FIFO of calls waiting to be sent (O(1) at both ends, nothing kept once empty). */
export class CallQueue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(call: T): void {
    this.items.push(call);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const call = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      // Empty: keep nothing.
      this.items.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return call;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
