import { App, Chart } from 'cdk8s';
import { type Manifest, only, synth } from '../../harness/manifests.ts';
import { buildDist } from '../../lib/app.ts';
import { ArgoSync } from '../../lib/argocd.ts';
import { OperatorFlowControl, type OperatorFlowControlProps } from '../../lib/operator/operator-flow-control.ts';
import { WebsiteOperator, type WebsiteOperatorProps } from '../../lib/operator/website-operator.ts';

const FLOW_CONTROL = 'flowcontrol.apiserver.k8s.io/v1';
const operator = (props?: WebsiteOperatorProps) => synth((chart) => new WebsiteOperator(chart, 'op', props));
const flowControl = (props: Partial<OperatorFlowControlProps> = {}) =>
  synth(
    (chart) =>
      new OperatorFlowControl(chart, 'fc', {
        serviceAccount: { name: 'website-operator', namespace: 'website-system' },
        ...props,
      }),
  );
const flowControlObjects = (manifests: Manifest[]) => manifests.filter((m) => m.apiVersion === FLOW_CONTROL);

// The built-in FlowSchemas' precedences (k8s.io/apiserver, pkg/apis/flowcontrol/bootstrap): the
// operator's schema must come after the control plane's and before service-accounts.
const BUILT_IN = {
  exempt: 1,
  probes: 2,
  'system-leader-election': 100,
  'kube-system-service-accounts': 900,
  'service-accounts': 9000,
};

describe('OperatorFlowControl', () => {
  describe('as WebsiteOperator synthesizes it with flowControl: true', () => {
    const manifests = operator({ flowControl: true });
    const serviceAccount = only(manifests, 'ServiceAccount');
    const priorityLevel = only(manifests, 'PriorityLevelConfiguration');
    const flowSchema = only(manifests, 'FlowSchema');

    test('a Limited priority level that queues: 10 shares, half lendable, one queue of 128', () => {
      expect(priorityLevel.apiVersion).toBe(FLOW_CONTROL);
      expect(priorityLevel.spec).toEqual({
        type: 'Limited',
        limited: {
          nominalConcurrencyShares: 10,
          lendablePercent: 50,
          limitResponse: { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 128 } },
        },
      });
    });

    test("a FlowSchema matching every request of the operator's own ServiceAccount, into that priority level", () => {
      expect(flowSchema.apiVersion).toBe(FLOW_CONTROL);
      expect(flowSchema.spec.priorityLevelConfiguration).toEqual({ name: priorityLevel.metadata.name });
      expect(flowSchema.spec.distinguisherMethod).toEqual({ type: 'ByUser' });
      expect(flowSchema.spec.rules).toEqual([
        {
          subjects: [
            {
              kind: 'ServiceAccount',
              serviceAccount: { name: serviceAccount.metadata.name, namespace: serviceAccount.metadata.namespace },
            },
          ],
          resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }],
          nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
        },
      ]);
    });

    test('its precedence wins over the built-in service-accounts schema, not over the control-plane ones', () => {
      const precedence = flowSchema.spec.matchingPrecedence;
      expect(precedence).toBe(1000);
      expect(precedence).toBeLessThan(BUILT_IN['service-accounts']);
      for (const builtIn of [
        BUILT_IN.exempt,
        BUILT_IN.probes,
        BUILT_IN['system-leader-election'],
        BUILT_IN['kube-system-service-accounts'],
      ]) {
        expect(precedence).toBeGreaterThan(builtIn);
      }
    });

    test('both are cluster-scoped, named after the ServiceAccount and its namespace, labelled like the rest of the operator', () => {
      for (const object of [priorityLevel, flowSchema]) {
        expect(object.metadata).toEqual({
          name: 'website-operator-website-system',
          labels: {
            'app.kubernetes.io/name': 'website-operator',
            'app.kubernetes.io/instance': 'website-operator',
            'app.kubernetes.io/component': 'flow-control',
            'app.kubernetes.io/part-of': 'website-stack',
          },
        });
      }
      const elsewhere = operator({ namespace: 'sites', flowControl: true });
      expect(flowControlObjects(elsewhere).map((m) => m.metadata.name)).toEqual([
        'website-operator-sites',
        'website-operator-sites',
      ]);
      expect(only(elsewhere, 'FlowSchema').spec.rules[0].subjects).toEqual([
        { kind: 'ServiceAccount', serviceAccount: { name: 'website-operator', namespace: 'sites' } },
      ]);
    });

    test('carry no namespace even in a chart that has one', () => {
      const chart = new Chart(new App({ outdir: '/nonexistent' }), 'namespaced', { namespace: 'sites' });
      new WebsiteOperator(chart, 'op', { namespace: 'sites', flowControl: true });
      const manifests = chart.toJson();
      expect(only(manifests, 'ServiceAccount').metadata.namespace).toBe('sites');
      for (const object of flowControlObjects(manifests)) expect(object.metadata.namespace).toBeUndefined();
    });
  });

  test('is off by default, and dist/website-operator/ does not ship it', () => {
    expect(flowControlObjects(operator())).toEqual([]);
    expect(flowControlObjects(operator({ flowControl: false }))).toEqual([]);
    const dist = buildDist('/nonexistent');
    expect(dist['website-operator'].charts.flatMap((chart) => flowControlObjects(chart.toJson()))).toEqual([]);
  });

  test("takes WebsiteOperator's options", () => {
    const manifests = operator({
      flowControlOptions: {
        name: 'sites-operator',
        matchingPrecedence: 950,
        nominalConcurrencyShares: 40,
        lendablePercent: 0,
        queuing: { queues: 16, handSize: 4, queueLengthLimit: 100 },
      },
    });
    const priorityLevel = only(manifests, 'PriorityLevelConfiguration', 'sites-operator');
    expect(priorityLevel.spec.limited).toEqual({
      nominalConcurrencyShares: 40,
      lendablePercent: 0,
      limitResponse: { type: 'Queue', queuing: { queues: 16, handSize: 4, queueLengthLimit: 100 } },
    });
    const flowSchema = only(manifests, 'FlowSchema', 'sites-operator');
    expect(flowSchema.spec.matchingPrecedence).toBe(950);
    expect(flowSchema.spec.priorityLevelConfiguration).toEqual({ name: 'sites-operator' });
    // Queuing settings left out keep their defaults.
    expect(
      only(operator({ flowControlOptions: { queuing: { queueLengthLimit: 200 } } }), 'PriorityLevelConfiguration').spec
        .limited.limitResponse.queuing,
    ).toEqual({
      queues: 1,
      handSize: 1,
      queueLengthLimit: 200,
    });
  });

  test('under Argo CD every object of it gets the chart sync wave, which ArgoSync.requireWaves demands', () => {
    const app = new App({ outdir: '/nonexistent' });
    ArgoSync.requireWaves(app);
    const chart = new Chart(app, 'operator');
    new WebsiteOperator(chart, 'op', { flowControl: true });
    ArgoSync.apply(chart, { wave: 0 });
    expect(app.node.validate()).toEqual([]);
    const objects = flowControlObjects(chart.toJson());
    expect(objects.map((m) => m.kind).sort()).toEqual(['FlowSchema', 'PriorityLevelConfiguration']);
    for (const object of objects) expect(object.metadata.annotations).toEqual({ [ArgoSync.WAVE_ANNOTATION]: '0' });
  });

  test.each<[string, Partial<OperatorFlowControlProps>, string]>([
    [
      'precedence 9000, where service-accounts matches first',
      { matchingPrecedence: 9000 },
      "matchingPrecedence must be a whole number from 2 to 8999 (1 is reserved for 'exempt', and from 9000 on the built-in 'service-accounts' schema matches first), got 9000",
    ],
    [
      'precedence 1, reserved for exempt',
      { matchingPrecedence: 1 },
      'matchingPrecedence must be a whole number from 2 to 8999',
    ],
    [
      'no shares',
      { nominalConcurrencyShares: 0 },
      'nominalConcurrencyShares must be a whole number from 1 to 2147483647 (0 would leave the operator only borrowed seats), got 0',
    ],
    ['a fractional share', { nominalConcurrencyShares: 2.5 }, 'nominalConcurrencyShares must be a whole number'],
    [
      'lending more than all',
      { lendablePercent: 101 },
      'lendablePercent must be a whole number from 0 to 100 (a percentage), got 101',
    ],
    [
      'a hand larger than the deck',
      { queuing: { queues: 4, handSize: 8 } },
      'queuing.handSize must be a whole number from 1 to 4 (at most queues), got 8',
    ],
    ['zero queues', { queuing: { queues: 0 } }, 'queuing.queues must be a whole number from 1 to 10000000'],
    ['an empty queue', { queuing: { queueLengthLimit: 0 } }, 'queuing.queueLengthLimit must be a whole number from 1'],
    [
      'a hand needing more than 60 bits',
      { queuing: { queues: 1024, handSize: 7 } },
      'queuing.handSize 7 is too large for 1024 queues: ceil(log2(queues) * handSize) must be at most 60',
    ],
    [
      'an upper-case name',
      { name: 'Website_Operator' },
      "name must be a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters), got 'Website_Operator'",
    ],
    [
      'a ServiceAccount without namespace',
      { serviceAccount: { name: 'website-operator', namespace: '' } },
      'serviceAccount needs both name and namespace',
    ],
  ])('refuses %s, naming the construct and the fix', (_, props, message) => {
    expect(() => flowControl(props)).toThrow(`OperatorFlowControl at 'test/fc': ${message}`);
  });

  test('reports every problem at once', () => {
    expect(() => flowControl({ lendablePercent: -1, queuing: { queueLengthLimit: -1 } })).toThrow(
      /lendablePercent .*; queuing\.queueLengthLimit/,
    );
  });
});
