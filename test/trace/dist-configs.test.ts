import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartManifests } from '../../harness/trace/local-stack.ts';
import { tracingBinaries } from '../../harness/trace/traces.ts';
import { COLLECTOR_COMPONENT_TYPES, componentType } from '../../lib/tracing/collector-config.ts';

const binaries = tracingBinaries();
const dir = mkdtempSync(join(tmpdir(), 'dist-configs-'));

/** Every trace-stack ConfigMap in dist/ (one folder per stack, dist/<chart>/<chart>.yaml): [chart, name, binary, config text]. */
const configs = readdirSync('dist')
  .filter((f) => f.startsWith('tracing-'))
  .flatMap((chart) => {
    const manifests = chartManifests(chart);
    return manifests
      .filter((m) => m.kind === 'ConfigMap')
      .map((cm) => {
        const image: string = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === cm.metadata.name)!
          .spec.template.spec.containers[0].image;
        const binary = image.includes('opentelemetry-collector') ? binaries.otelcol : binaries.jaeger;
        return [chart, cm.metadata.name as string, binary, cm.data['config.yaml'] as string] as const;
      });
  });

function validate(binary: string, text: string): { status: number | null; output: string } {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  const r = spawnSync(binary, ['validate', `--config=${file}`], { encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('every trace-stack configuration in dist/, checked by the real binary', () => {
  test('dist/ holds the development and both production charts', () => {
    expect(new Set(configs.map(([chart]) => chart))).toEqual(
      new Set(['tracing-dev', 'tracing-production-elasticsearch', 'tracing-production-cassandra']),
    );
    expect(configs.length).toBe(8);
  });

  test.each(configs)('%s: %s passes `validate`', (_chart, _name, binary, text) => {
    const { status, output } = validate(binary, text);
    expect({ status, output: output.split('\n').filter((l) => /error|invalid/i.test(l)) }).toEqual({
      status: 0,
      output: [],
    });
  });

  test.each(configs)(
    '%s: %s with a misspelt key fails `validate` (the check can fail)',
    (_chart, _name, binary, text) => {
      const broken = text.replace(/^(\s+)endpoint:/m, '$1endpiont:');
      expect(broken).not.toBe(text);
      const { status, output } = validate(binary, broken);
      expect(status).not.toBe(0);
      expect(output).toMatch(/endpiont/);
    },
  );

  test('the collector distribution is built with exactly the component types the typed model knows', () => {
    // Go module (last path element) → the component type it registers.
    const types: Record<string, string> = {
      otlpreceiver: 'otlp',
      memorylimiterprocessor: 'memory_limiter',
      batchprocessor: 'batch',
      filterprocessor: 'filter',
      probabilisticsamplerprocessor: 'probabilistic_sampler',
      tailsamplingprocessor: 'tail_sampling',
      attributesprocessor: 'attributes',
      otlpexporter: 'otlp_grpc',
      otlphttpexporter: 'otlp_http',
      debugexporter: 'debug',
      healthcheckextension: 'health_check',
      bearertokenauthextension: 'bearertokenauth',
      basicauthextension: 'basicauth',
      oauth2clientauthextension: 'oauth2client',
      oidcauthextension: 'oidc',
    };
    const manifest = parse(readFileSync('scripts/otelcol-builder.yaml', 'utf8'));
    for (const section of Object.keys(COLLECTOR_COMPONENT_TYPES) as (keyof typeof COLLECTOR_COMPONENT_TYPES)[]) {
      const built = (manifest[section] as { gomod: string }[]).map(
        (c) => types[c.gomod.split(' ')[0].split('/').pop()!] ?? c.gomod,
      );
      expect([section, new Set(built)]).toEqual([section, new Set(COLLECTOR_COMPONENT_TYPES[section])]);
    }
  });

  test('every component a dist/ collector config uses is one the typed model knows (so the distribution has it)', () => {
    for (const [, name, binary, text] of configs) {
      if (binary !== binaries.otelcol) continue;
      const doc = parse(text);
      for (const section of Object.keys(COLLECTOR_COMPONENT_TYPES) as (keyof typeof COLLECTOR_COMPONENT_TYPES)[]) {
        for (const id of Object.keys(doc[section] ?? {}))
          expect([
            name,
            section,
            (COLLECTOR_COMPONENT_TYPES[section] as readonly string[]).includes(componentType(id)),
          ]).toEqual([name, section, true]);
      }
    }
  });
});
