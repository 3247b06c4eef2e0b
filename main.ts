// Writes dist/: `npm run synth` (or `cdk8s synth`, which sets CDK8S_OUTDIR), one folder per
// deployable unit (lib/app.ts, buildDist). dist/ is emptied first so a renamed or removed unit
// or chart leaves no stale file behind.
import { rmSync } from 'node:fs';
import { buildDist } from './lib/app.ts';

const outdir = process.env.CDK8S_OUTDIR ?? 'dist';
const units = buildDist(outdir);
rmSync(outdir, { recursive: true, force: true });
for (const app of Object.values(units)) app.synth();
