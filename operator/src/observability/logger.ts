import { type Logger, pino } from 'pino';
import { activeTraceIds } from './tracing.ts';

export type { Logger } from 'pino';

/**
 * JSON logs, one object per line on stdout (pino). Fields that could carry credentials are
 * redacted wherever they appear, as a second line of defence: the code never logs them.
 *
 * Written synchronously, as Go's loggers write to os.Stdout: pino's default destination writes in
 * the background, and a line still being written when the process exits is lost (the last lines,
 * "stopped" or a fatal start error, are the ones read to learn why it stopped), or lands after a
 * later one. A line costs one write(2) either way; a reader that falls behind slows the operator
 * instead of losing its log.
 */
export function createLogger(level = process.env.LOG_LEVEL ?? 'info', destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { component: 'website-operator' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Lines logged inside a traced reconcile carry its trace and span ids.
      mixin: () => activeTraceIds() ?? {},
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers.authorization',
          'token',
          '*.token',
          'key',
          '*.key',
          'tls.key',
        ],
        censor: '[redacted]',
      },
    },
    (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: true }),
  );
}
