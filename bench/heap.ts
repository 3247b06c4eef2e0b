// The V8 heap a Node process holds: used bytes right after a full garbage collection, read over the
// inspector protocol (HeapProfiler.collectGarbage, then Runtime.getHeapUsage). The process is
// started with --inspect-port (nothing listens until then); SIGUSR1 opens the inspector when the
// figure is wanted, so the rest of the benchmark runs without it.

interface Target {
  readonly webSocketDebuggerUrl: string;
}

/** Bytes of V8 heap in use after a full GC in process `pid`, whose inspector port is `port`. */
export async function heapAfterGc(pid: number, port: number): Promise<number> {
  process.kill(pid, 'SIGUSR1');
  const deadline = Date.now() + 10_000;
  let targets: Target[] | undefined;
  while (!targets) {
    try {
      targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Target[];
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`no inspector on port ${port} after SIGUSR1: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error(`cannot open ${targets[0].webSocketDebuggerUrl}`));
  });
  const pending = new Map<number, (message: { result?: any; error?: { message: string } }) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data));
    pending.get(message.id)?.(message);
  };
  let next = 0;
  const send = (method: string): Promise<any> =>
    new Promise((resolve, reject) => {
      const id = ++next;
      pending.set(id, (message) =>
        message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result),
      );
      socket.send(JSON.stringify({ id, method }));
    });
  try {
    await send('HeapProfiler.collectGarbage');
    const usage = (await send('Runtime.getHeapUsage')) as { usedSize: number };
    return usage.usedSize;
  } finally {
    socket.close();
  }
}
