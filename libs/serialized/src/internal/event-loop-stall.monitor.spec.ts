import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { EventLoopStallMonitor } from './event-loop-stall.monitor';

const busy = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // a synchronous burst
  }
};

describe('EventLoopStallMonitor', () => {
  it('knows nothing while stopped, and leaves no timer behind when stopped', () => {
    const monitor = new EventLoopStallMonitor(10);
    expect(monitor.respondedAt()).toBe(-Infinity);
    monitor.start();
    monitor.start();
    expect(monitor.running).toBe(true);
    monitor.stop();
    monitor.stop();
    expect(monitor.running).toBe(false);
    expect(monitor.respondedAt()).toBe(-Infinity);
  });

  it('dates a reading on a healthy loop within about two intervals', async () => {
    const monitor = new EventLoopStallMonitor(10);
    monitor.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(performance.now() - monitor.respondedAt()).toBeLessThan(250);
    } finally {
      monitor.stop();
    }
  });

  it('dates data read right after a stall from where the stall began, whether or not the overdue tick ran first', async () => {
    const monitor = new EventLoopStallMonitor(10);
    let serverSide: net.Socket | undefined;
    const server = net.createServer((socket) => (serverSide = socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    await new Promise((resolve) => setTimeout(resolve, 30));
    monitor.start();
    /** Data sent right before a 300 ms burst that `schedule` runs; read once the burst is over. */
    const stallAndRead = async (schedule: (burst: () => void) => void) => {
      await new Promise((resolve) => setTimeout(resolve, 40));
      const read = new Promise<{ at: number; respondedAt: number }>((resolve) =>
        client.once('data', () => resolve({ at: performance.now(), respondedAt: monitor.respondedAt() })),
      );
      let stallStart = 0;
      schedule(() => {
        serverSide!.write('hand-off');
        stallStart = performance.now();
        busy(300);
      });
      return { ...(await read), stallStart };
    };
    try {
      // In a timer callback: the socket is read in the same turn, before any tick.
      const inTimers = await stallAndRead((burst) => setTimeout(burst, 0));
      // After the poll phase (setImmediate work): the next turn runs the overdue tick before it reads the socket.
      const inCheck = await stallAndRead((burst) => setImmediate(burst));
      for (const { at, respondedAt, stallStart } of [inTimers, inCheck]) {
        expect(at - stallStart).toBeGreaterThanOrEqual(300);
        expect(respondedAt).toBeLessThanOrEqual(stallStart);
      }
      // A later reading on a healthy loop is dated close to it again.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(performance.now() - monitor.respondedAt()).toBeLessThan(250);
    } finally {
      monitor.stop();
      client.destroy();
      serverSide?.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
