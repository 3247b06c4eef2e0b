// Runs in every test file's context before it (jest.config.js `setupFiles`).
import { addAbortListener } from 'node:events';

// Jest 29 runs tests in a vm context whose Symbol has no `dispose` (Jest 30 adds it; Node defines
// it only on its main context). undici 8.4+ takes `addAbortListener(...)[Symbol.dispose]` as the
// cleanup of every fetch (nodejs/undici#5486), so without it each KubeClient request fails with
// "removeAbortListener is not a function". Give this context the very symbol Node's disposables use.
if (Symbol.dispose === undefined) {
  const disposable = addAbortListener(new AbortController().signal, () => {});
  const [dispose] = Object.getOwnPropertySymbols(disposable);
  Object.defineProperty(Symbol, 'dispose', { value: dispose });
  (disposable as unknown as Record<symbol, () => void>)[dispose]();
}
