// Builds the trace stack's binaries once (cached by version: minutes cold, instant warm), before
// any trace test starts them, and starts the servers the production stack's tests share
// (harness/trace/services.ts): Elasticsearch and Keycloak, once per run.
import { builtBinaries, tracingBinaries } from '../../harness/trace/local-stack.ts';
import { startSharedServices } from '../../harness/trace/services.ts';

export default async function globalSetup(): Promise<void> {
  tracingBinaries();
  builtBinaries('oauth2-proxy', 'es-index-cleaner');
  (globalThis as { stopTraceServices?: () => Promise<void> }).stopTraceServices = await startSharedServices();
}
