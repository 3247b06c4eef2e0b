// Stops the servers the trace project's global setup started.
export default async function globalTeardown(): Promise<void> {
  await (globalThis as { stopTraceServices?: () => Promise<void> }).stopTraceServices?.();
}
