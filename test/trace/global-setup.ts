// Builds the trace stack's binaries once (cached by version: minutes cold, instant warm), before
// any trace test starts them.
import { tracingBinaries } from '../../scripts/tracing-local.ts';

export default function globalSetup(): void {
  tracingBinaries();
}
