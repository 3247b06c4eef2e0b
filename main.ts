// Writes dist/: `npm run synth` (or `cdk8s synth`, which sets CDK8S_OUTDIR).
// dist/ is emptied first so a renamed or removed chart leaves no stale file behind.
import { rmSync } from 'node:fs';
import { buildApp } from './lib/app.ts';

const app = buildApp();
rmSync(app.outdir, { recursive: true, force: true });
app.synth();
