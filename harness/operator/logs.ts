import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../operator/src/observability/logger.ts';

/** An operator logger whose JSON lines land in `logs`, one string a line, for a test to read. */
export function captureLogs(level = 'info'): { logs: string[]; logger: Logger } {
  const logs: string[] = [];
  const logger = createLogger(
    level,
    new Writable({
      write: (chunk, _, done) => {
        logs.push(String(chunk));
        done();
      },
    }),
  );
  return { logs, logger };
}
