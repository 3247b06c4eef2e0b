// ESM throughout (@kubernetes/client-node is ESM-only): ts-jest's ESM mode, run with
// --experimental-vm-modules by scripts/test.sh.
const base = {
  testEnvironment: 'node',
  // The local clusters' state (etcd writes *.snap files, which jest would take for obsolete snapshots),
  // Argo CD's checkouts of this repository (package.json files that would collide with ours), and the
  // local servers' state (.local/, see docs/use/production-trace-stack.md; the tests' test-results/).
  modulePathIgnorePatterns: [
    '<rootDir>/.cluster/',
    '<rootDir>/.argocd/',
    '<rootDir>/.local/',
    '<rootDir>/test-results/',
  ],
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.jest.json' }] },
  // Symbol.dispose in the test context, which undici's fetch (KubeClient) needs under Jest 29.
  setupFiles: ['<rootDir>/test/jest-setup.ts'],
};

/** @type {import('jest').Config} */
export default {
  // Cluster tests wait on real controllers; unit tests finish in milliseconds either way.
  testTimeout: 120_000,
  projects: [
    // The benchmark's own pure parts are unit-tested beside it (bench/report.test.ts): nothing in test/ imports bench/.
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts', '<rootDir>/bench/**/*.test.ts'] },
    {
      ...base,
      displayName: 'cluster',
      testMatch: ['<rootDir>/test/cluster/**/*.test.ts'],
      globalSetup: '<rootDir>/test/cluster/global-setup.ts',
      globalTeardown: '<rootDir>/test/cluster/global-teardown.ts',
    },
    // Suites that would disturb others on a shared cluster (the chaos run, the operator image), on a
    // cluster of their own, so that they run beside the cluster project.
    {
      ...base,
      displayName: 'isolated',
      testMatch: ['<rootDir>/test/isolated/**/*.test.ts'],
      globalSetup: '<rootDir>/test/isolated/global-setup.ts',
      globalTeardown: '<rootDir>/test/isolated/global-teardown.ts',
    },
    // A real Argo CD syncing dist/ into a cluster of its own (harness/argocd/argocd.ts).
    {
      ...base,
      displayName: 'argocd',
      testMatch: ['<rootDir>/test/argocd/**/*.test.ts'],
      globalSetup: '<rootDir>/test/argocd/global-setup.ts',
      globalTeardown: '<rootDir>/test/argocd/global-teardown.ts',
    },
    // dist/ as users apply it, on a cluster whose one node is real (scripts/real-node.sh): every pod runs.
    {
      ...base,
      displayName: 'node',
      testMatch: ['<rootDir>/test/node/**/*.test.ts'],
      globalSetup: '<rootDir>/test/node/global-setup.ts',
      globalTeardown: '<rootDir>/test/node/global-teardown.ts',
    },
    // The docs pages a reader follows on the real node, run as written (harness/docs/walkthrough.ts):
    // each starts the node from its copy of the repository, so this project runs after the node
    // project, whose node it would otherwise meet (one real node runs per machine).
    { ...base, displayName: 'node-walkthroughs', testMatch: ['<rootDir>/test/node-walkthroughs/**/*.test.ts'] },
    // The packed package installed into fresh cdk8s apps, as its users install it.
    { ...base, displayName: 'package', testMatch: ['<rootDir>/test/package/**/*.test.ts'] },
    // The trace stack with the real Jaeger, Collector, HotROD and oauth2-proxy binaries, as local
    // processes; the production stack on a real Elasticsearch, Cassandra and Keycloak.
    {
      ...base,
      displayName: 'trace',
      testMatch: ['<rootDir>/test/trace/**/*.test.ts'],
      globalSetup: '<rootDir>/test/trace/global-setup.ts',
      globalTeardown: '<rootDir>/test/trace/global-teardown.ts',
    },
  ],
};
