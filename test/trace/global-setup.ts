// Builds the trace stack's binaries once (cached by version: minutes cold, instant warm), before
// any trace test starts them.
import { tracingBinaries } from '../support/local-stack.ts';

export default function globalSetup(): void {
  tracingBinaries();
}
