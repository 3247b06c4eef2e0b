// A Node process's inspector, over the DevTools protocol: the V8 heap it holds after a full garbage
// collection (the benchmark's heap figures), and the CPU and heap profiles of `npm run bench:profile`.
// Node's own WebSocket client; the protocol's methods are V8's (HeapProfiler, Profiler, Runtime).

interface Target {
  readonly webSocketDebuggerUrl: string;
}

/** A connection to one process's inspector. */
export class Inspector {
  private readonly socket: WebSocket;
  private readonly pending = new Map<number, (message: { result?: any; error?: { message: string } }) => void>();
  private next = 0;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data));
      this.pending.get(message.id)?.(message);
      this.pending.delete(message.id);
    };
  }

  /** Connects to the inspector listening on `port`, waiting up to `timeoutMs` for it to listen. */
  static async connect(port: number, timeoutMs = 10_000): Promise<Inspector> {
    const deadline = Date.now() + timeoutMs;
    let targets: Target[] | undefined;
    while (!targets) {
      try {
        targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Target[];
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`no inspector on port ${port}: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = () => reject(new Error(`cannot open ${targets[0].webSocketDebuggerUrl}`));
    });
    return new Inspector(socket);
  }

  /** Calls a protocol method; resolves with its result. */
  send<T = any>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    return new Promise((resolve, reject) => {
      const id = ++this.next;
      this.pending.set(id, (message) =>
        message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result),
      );
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** V8 heap in use right after a full garbage collection, in bytes. */
  async heapAfterGc(): Promise<number> {
    await this.send('HeapProfiler.collectGarbage');
    return (await this.send<{ usedSize: number }>('Runtime.getHeapUsage')).usedSize;
  }

  close(): void {
    this.socket.close();
  }
}

/**
 * Bytes of V8 heap in use after a full GC in process `pid`, whose inspector port is `port`. The
 * process is started with --inspect-port (nothing listens until then); SIGUSR1 opens the inspector
 * when the figure is wanted, so the rest of the benchmark runs without it.
 */
export async function heapAfterGc(pid: number, port: number): Promise<number> {
  process.kill(pid, 'SIGUSR1');
  const inspector = await Inspector.connect(port);
  try {
    return await inspector.heapAfterGc();
  } finally {
    inspector.close();
  }
}
