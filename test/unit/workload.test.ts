import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { expectPodSecurityRestricted, type Manifest, only, synth } from '../../harness/manifests.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import { escapeHtml, renderNginxConfig, renderPage, START_SCRIPT, textColorOn } from '../../lib/workload/page.ts';
import { WebsiteWorkload, type WebsiteWorkloadProps, websiteUrl } from '../../lib/workload/website-workload.ts';

function site(name: string, spec: Partial<WebsiteV1['spec']> = {}, uid = `uid-${name}`): WebsiteV1 {
  return {
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name, namespace: 'team', uid },
    spec: { title: 'Hello', replicas: 2, color: '#2196F3', ...spec },
  };
}

function workload(props: WebsiteWorkloadProps): Manifest[] {
  return synth((chart) => new WebsiteWorkload(chart, 'w', props));
}

const hostileTitles = [
  '<script>alert(1)</script>',
  `"quoted" and 'single'`,
  '$(touch /tmp/pwned) `id` ${HOME}',
  'back\\slash \\n not a newline',
  'line one\nline two',
  'emoji 🚀🌈 and ünïcödé',
  'x'.repeat(2048),
];

describe('WebsiteWorkload', () => {
  const manifests = workload({ website: site('hello') });
  const deployment = only(manifests, 'Deployment');
  const service = only(manifests, 'Service');
  const pod = deployment.spec.template.spec;
  const env = (name: string) => pod.containers[0].env.find((e: Manifest) => e.name === name).value;

  test('names the Deployment and Service website-<name> in the Website namespace', () => {
    expect([deployment.metadata.name, deployment.metadata.namespace]).toEqual(['website-hello', 'team']);
    expect([service.metadata.name, service.metadata.namespace]).toEqual(['website-hello', 'team']);
    expect(manifests).toHaveLength(2);
  });

  test('owns both children through a controller owner reference', () => {
    const owner = {
      apiVersion: 'web.example.com/v1',
      kind: 'Website',
      name: 'hello',
      uid: 'uid-hello',
      controller: true,
      blockOwnerDeletion: true,
    };
    expect(deployment.metadata.ownerReferences).toEqual([owner]);
    expect(service.metadata.ownerReferences).toEqual([owner]);
    const custom = only(workload({ website: site('hello'), group: 'sites.acme.io' }), 'Service');
    expect(custom.metadata.ownerReferences[0].apiVersion).toBe('sites.acme.io/v1');
  });

  test('runs spec.replicas pods, selected by the instance label', () => {
    expect(deployment.spec.replicas).toBe(2);
    const selector = { 'app.kubernetes.io/name': 'website', 'app.kubernetes.io/instance': 'hello' };
    expect(deployment.spec.selector.matchLabels).toEqual(selector);
    expect(service.spec.selector).toEqual(selector);
    expect(deployment.spec.template.metadata.labels).toEqual({
      ...selector,
      'app.kubernetes.io/managed-by': 'website-operator',
    });
  });

  test("two Websites never select each other's pods", () => {
    const other = only(workload({ website: site('hello-2') }), 'Deployment');
    const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([k, v]) => labels[k] === v);
    expect(matches(service.spec.selector, other.spec.template.metadata.labels)).toBe(false);
    expect(matches(other.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(false);
  });

  test('the Service serves port 80 from the container port named http', () => {
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(pod.containers[0].ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
  });

  test('pins an unprivileged image and passes Pod Security restricted with a read-only root', () => {
    const container = pod.containers[0];
    expect(container.image).toMatch(/^nginxinc\/nginx-unprivileged:\d+\.\d+\.\d+-alpine$/);
    expectPodSecurityRestricted(pod);
    expect(pod.securityContext.runAsUser).toBe(101);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.volumes).toEqual([{ name: 'site', emptyDir: { sizeLimit: '16Mi' } }]);
  });

  test('sets small resources and HTTP probes deliberately', () => {
    const container = pod.containers[0];
    expect(container.resources).toEqual({ requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/', port: 'http' });
  });

  test('carries the rendered page and configuration to the pod', () => {
    expect(env('WEBSITE_HTML')).toBe(renderPage('Hello', '#2196F3'));
    expect(env('NGINX_CONF')).toBe(renderNginxConfig());
    expect(pod.containers[0].command).toEqual(['/bin/sh', '-c', START_SCRIPT]);
  });

  test('defaults the colour when a Website has none', () => {
    const { color: _, ...spec } = site('plain').spec;
    const page = only(
      workload({ website: { ...site('plain'), spec } }),
      'Deployment',
    ).spec.template.spec.containers[0].env.find((e: Manifest) => e.name === 'WEBSITE_HTML').value;
    expect(page).toContain('background: #2196F3;');
  });

  test('refuses a Website without uid, and a colour that is not hex', () => {
    expect(() => workload({ website: site('x', {}, '') })).toThrow(
      /needs metadata\.name, metadata\.namespace and metadata\.uid/,
    );
    expect(() => workload({ website: site('x', { color: 'red;}</style><script>' }) })).toThrow(
      /color must be a CSS hex colour/,
    );
  });

  test('status url is the Service address', () => {
    expect(websiteUrl('hello', 'team')).toBe('http://website-hello.team.svc.cluster.local');
    expect(websiteUrl('hello', 'team', 'corp.internal')).toBe('http://website-hello.team.svc.corp.internal');
  });
});

describe('the page', () => {
  const unescapeHtml = (html: string) =>
    html.replace(
      /&(amp|lt|gt|quot|#39);/g,
      (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!,
    );

  const label = (t: string) => (t.length > 60 ? `a ${t.length}-character title` : JSON.stringify(t));
  test.each(hostileTitles.map((t) => [label(t), t]))('shows %s literally, escaped', (_, title) => {
    const page = renderPage(title, '#2196F3');
    const h1 = page.match(/<h1 id="title">([\s\S]*)<\/h1>/)![1];
    expect(unescapeHtml(h1)).toBe(title);
    expect(h1).not.toMatch(/[<>"']/);
  });

  test('escaping is reversible and leaves no markup for any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        expect(unescapeHtml(escapeHtml(text))).toBe(text);
        expect(escapeHtml(text)).not.toMatch(/[<>"']/);
      }),
    );
  });

  test('picks a readable text colour', () => {
    expect(textColorOn('#000000')).toBe('#ffffff');
    expect(textColorOn('#fff')).toBe('#000000');
    expect(textColorOn('#ffff00')).toBe('#000000');
    expect(textColorOn('#000080')).toBe('#ffffff');
  });
});

describe('the start script', () => {
  test('writes page and configuration verbatim and executes nothing from them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'start-'));
    try {
      // nginx itself is exercised by the page test; here a recorder stands in to capture its arguments.
      const bin = join(dir, 'bin');
      spawnSync('mkdir', [bin]);
      writeFileSync(join(bin, 'nginx'), `#!/bin/sh\nprintf '%s\\n' "$@" > "${join(dir, 'nginx-args')}"\n`);
      chmodSync(join(bin, 'nginx'), 0o755);
      const marker = join(dir, 'pwned');
      const title = `$(touch ${marker}) \`touch ${marker}\` "q" 'q' \\ \n next line 🚀`;
      const page = renderPage(title, '#123456');
      const result = spawnSync('/bin/sh', ['-c', START_SCRIPT], {
        env: {
          PATH: `${bin}:/usr/bin:/bin`,
          SITE_DIR: join(dir, 'site'),
          WEBSITE_HTML: page,
          NGINX_CONF: renderNginxConfig(),
        },
        encoding: 'utf8',
      });
      expect(result.status).toBe(0);
      expect(readFileSync(join(dir, 'site/html/index.html'), 'utf8')).toBe(page);
      expect(readFileSync(join(dir, 'site/nginx.conf'), 'utf8')).toBe(renderNginxConfig());
      expect(existsSync(marker)).toBe(false);
      expect(readFileSync(join(dir, 'nginx-args'), 'utf8').split('\n')).toEqual(
        expect.arrayContaining([
          '-p',
          `${join(dir, 'site')}/`,
          '-c',
          `${join(dir, 'site')}/nginx.conf`,
          '-g',
          'daemon off;',
        ]),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
