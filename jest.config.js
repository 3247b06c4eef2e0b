// ESM throughout (@kubernetes/client-node is ESM-only): ts-jest's ESM mode, run with
// --experimental-vm-modules by scripts/test.sh.
const base = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  // ts-jest rewrites `./x.ts` imports to `./x.js`; resolve them back to the TypeScript source.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

/** @type {import('jest').Config} */
export default {
  projects: [{ ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] }],
};
