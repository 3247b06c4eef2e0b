// `npm run chaos:trace [-- --short]`: the trace stack under faults, measured (what it does:
// harness/chaos/trace-chaos.ts). Prints the report's markdown, then its figures as JSON, and writes
// the report as docs/measure/results/trace-chaos.md.
//
//   node --disable-warning=ExperimentalWarning bench/chaos-trace.ts [--short]
import { parseArgs } from 'node:util';
import { traceChaos } from '../harness/chaos/trace-chaos.ts';
import { npmCommand, writeResultsPage } from './report.ts';

const { values } = parseArgs({ options: { short: { type: 'boolean', default: false } } });
const log = (line: string) => process.stderr.write(`[chaos:trace] ${new Date().toISOString().slice(11, 19)} ${line}\n`);
traceChaos({ short: values.short ?? false, log }).then(
  async ({ markdown: report, json }) => {
    process.stdout.write(`${report}\n\`\`\`json\n${JSON.stringify(json, null, 2)}\n\`\`\`\n`);
    log(
      `written to ${await writeResultsPage('trace-chaos', npmCommand('chaos:trace'), `# The trace stack under faults\n\n${report}`)}`,
    );
  },
  (error: Error) => {
    log(`failed: ${error.stack ?? error.message}`);
    process.exitCode = 1;
  },
);
