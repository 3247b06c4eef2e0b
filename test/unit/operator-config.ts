import { Manager, type ManagerDependencies } from '../../operator/src/controller/manager.ts';
import { type OperatorConfig, setupWebsiteController } from '../../operator/src/reconciler/website-controller.ts';

/**
 * The configuration the unit tests run the whole Operator with on the in-memory API: the process
 * defaults (operator/src/bin/config.ts), one namespace, no leader election, no resync during a
 * test, and ports picked by the system; each test file overrides what it is about.
 */
export function testOperatorConfig(overrides: Partial<OperatorConfig> = {}): OperatorConfig {
  return {
    group: 'web.example.com',
    watchNamespaces: ['team-a'],
    operatorNamespace: 'website-system',
    identity: 'op-0',
    leaderElection: false,
    leaseName: 'website-operator',
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    concurrency: 4,
    resyncMs: 3_600_000,
    watchList: true,
    cacheSyncTimeoutMs: 1_000,
    fieldManager: 'website-operator',
    clusterDomain: 'cluster.local',
    metricsPort: 0,
    healthPort: 0,
    ...overrides,
  };
}

/** The operator as operator/src/bin/operator.ts builds it: a Manager running the Website controller. */
export function websiteOperator(config: OperatorConfig, deps: ManagerDependencies) {
  const manager = new Manager(config, deps);
  return { manager, websites: setupWebsiteController(manager, config) };
}

export type WebsiteOperator = ReturnType<typeof websiteOperator>;
