// The operator bundle (operator/bundle.ts), which the image, `npm run operator`, the cluster
// tests and the benchmark run: what its entry chunk holds (from esbuild's metafile), and which of its
// files a real process opens. The process runs without a cluster (its API server address refuses
// connections, so it keeps retrying): loading modules happens before it talks to the API.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Metafile } from 'esbuild';
import { type LogLine, OperatorProcess } from '../../harness/operator/operator-process.ts';
import { eventually } from '../../harness/process/poll.ts';
import { freePort } from '../../harness/process/ports.ts';
import { exitedOrBlockedOnStdout, SlowPipe } from '../../harness/process/slow-pipe.ts';
import {
  asciiOnly,
  buildOperator,
  OPERATOR_BUILD_DIR,
  OPERATOR_ENTRY,
  type OperatorBuild,
} from '../../operator/bundle.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let build: OperatorBuild;
let entryOutput: string;

/** Output files the entry chunk loads before running: itself and its static imports, transitively. */
function loadedAtStart(metafile: Metafile, entry: string): Set<string> {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const output = queue.shift()!;
    if (seen.has(output)) continue;
    seen.add(output);
    for (const imported of metafile.outputs[output].imports)
      if (imported.kind === 'import-statement' && !imported.external) queue.push(imported.path);
  }
  return seen;
}

/** Source files (relative to the repository) bundled into `outputs`. */
function inputsOf(metafile: Metafile, outputs: Iterable<string>): string[] {
  return [...outputs].flatMap((output) => Object.keys(metafile.outputs[output].inputs));
}

/** The output chunk whose entry point (a dynamic import's target) is `source`. */
function chunkOf(metafile: Metafile, source: string): string {
  const found = Object.entries(metafile.outputs).find(([, output]) => output.entryPoint === source);
  if (!found) throw new Error(`no chunk has ${source} as its entry point`);
  return found[0];
}

// What only the conversion webhook or the OpenTelemetry SDK uses.
const WEBHOOK_ONLY = /^operator\/src\/webhook\/|node_modules\/(@peculiar\/x509|reflect-metadata|tsyringe)\//;
const SDK_ONLY =
  /^operator\/src\/observability\/tracing-sdk\.ts$|node_modules\/@opentelemetry\/(sdk-trace|exporter-trace-otlp-proto|otlp-transformer|resources|context-async-hooks)\//;

beforeAll(async () => {
  build = await buildOperator();
  entryOutput = relative(ROOT, build.entry);
}, 120_000);

describe('the operator bundle', () => {
  test('is an ES module entry with chunks in operator/build, built from operator/src/bin/operator.ts', () => {
    expect(build.entry).toBe(join(OPERATOR_BUILD_DIR, OPERATOR_ENTRY));
    expect(build.metafile.outputs[entryOutput].entryPoint).toBe('operator/src/bin/operator.ts');
    expect(readFileSync(build.entry, 'utf8')).toMatch(
      /^(#!.*\n)?import \{ createRequire as __createRequire \} from 'node:module';/,
    );
  });

  test('a second build of the same sources writes nothing', async () => {
    const again = await buildOperator();
    expect(again.written).toEqual([]);
    expect(again.removed).toEqual([]);
  });

  test('carries no source maps, inline or linked', () => {
    for (const file of readdirSync(OPERATOR_BUILD_DIR, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.mjs'),
    )) {
      expect([
        basename(file),
        readFileSync(join(OPERATOR_BUILD_DIR, file), 'utf8').includes('sourceMappingURL='),
      ]).toEqual([basename(file), false]);
    }
  });

  test('is ASCII only, so that V8 keeps its source at one byte per character; a package comment outside ASCII becomes an escape', () => {
    for (const file of readdirSync(OPERATOR_BUILD_DIR, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.mjs'),
    ))
      expect([basename(file), readFileSync(join(OPERATOR_BUILD_DIR, file)).some((byte) => byte > 0x7f)]).toEqual([
        basename(file),
        false,
      ]);
    const escaped = new TextDecoder().decode(asciiOnly(new TextEncoder().encode("// request’s URL, § 5\nx = 'a';\n")));
    expect(escaped).toBe("// request\\u2019s URL, \\u00a7 5\nx = 'a';\n");
  });

  test('what loads at start holds neither the conversion webhook nor the OpenTelemetry SDK: each is a chunk of its own', () => {
    const atStart = inputsOf(build.metafile, loadedAtStart(build.metafile, entryOutput));
    expect(atStart).toContain('operator/src/bin/operator.ts');
    expect(atStart).toContain('operator/src/observability/tracing.ts');
    expect(atStart.filter((input) => WEBHOOK_ONLY.test(input) || SDK_ONLY.test(input))).toEqual([]);

    const webhook = chunkOf(build.metafile, 'operator/src/webhook/webhook-component.ts');
    const sdk = chunkOf(build.metafile, 'operator/src/observability/tracing-sdk.ts');
    expect(inputsOf(build.metafile, [webhook])).toEqual(
      expect.arrayContaining(['operator/src/webhook/conversion-server.ts', 'operator/src/webhook/certificates.ts']),
    );
    expect(
      inputsOf(build.metafile, [sdk]).some((input) => input.includes('node_modules/@opentelemetry/sdk-trace/')),
    ).toBe(true);
  });

  test("leaves out client-node's generated APIs and models and the library's other constructs", () => {
    const all = inputsOf(build.metafile, Object.keys(build.metafile.outputs));
    expect(all.filter((input) => input.includes('node_modules/@kubernetes/client-node/dist/gen/apis/'))).toEqual([]);
    expect(all.filter((input) => input.includes('node_modules/@kubernetes/client-node/dist/gen/models/'))).toEqual([]);
    expect(
      all.filter(
        (input) => /^lib\/(tracing|shell-operator)\//.test(input) || input === 'lib/operator/operator-deployment.ts',
      ),
    ).toEqual([]);
  });
});

describe("undici in the bundle: operator/undici.cjs, not the package's index", () => {
  const require = createRequire(import.meta.url);
  const lean = require('../../operator/undici.cjs') as Record<string, unknown>;

  test("what loads at start holds none of the index's parts: fetch itself, WebSocket, EventSource, the cache, the mocks", () => {
    const atStart = inputsOf(build.metafile, loadedAtStart(build.metafile, entryOutput));
    expect(atStart).toContain('operator/undici.cjs');
    expect(atStart).toContain('node_modules/undici/lib/dispatcher/agent.js');
    expect(
      atStart.filter((input) =>
        /^node_modules\/undici\/(index\.js|lib\/(mock|cache|interceptor)\/|lib\/web\/(websocket|eventsource|cache|cookies)\/|lib\/web\/fetch\/index\.js)/.test(
          input,
        ),
      ),
    ).toEqual([]);
  });

  test("exports undici's own classes, and every name a bundled module imports from 'undici'", () => {
    const undici = require('undici') as Record<string, unknown>;
    for (const name of ['Agent', 'ProxyAgent', 'buildConnector']) expect(lean[name]).toBe(undici[name]);
    // esbuild checks no names imported from CommonJS: one this file lacked would be undefined at run time.
    const imported = new Set<string>();
    for (const output of Object.values(build.metafile.outputs))
      for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
        if (bytesInOutput === 0 || !/\.(ts|js|mjs)$/.test(input)) continue;
        for (const [, names] of readFileSync(join(ROOT, input), 'utf8').matchAll(
          /import\s*\{([^}]*)\}\s*from\s*['"]undici['"]/g,
        ))
          for (const name of names.split(','))
            if (name.trim() && !name.trim().startsWith('type ')) imported.add(name.trim().split(/\s+as\s+/)[0]);
      }
    expect([...imported].sort()).toEqual(expect.arrayContaining(['Agent', 'ProxyAgent', 'request']));
    expect([...imported].filter((name) => typeof lean[name] !== 'function')).toEqual([]);
  });

  test('request() sends through the given dispatcher and answers with status, headers and body', async () => {
    const server = createHttpServer((req, res) => res.end(`${req.method} ${req.url}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = new (lean.Agent as new () => { close(): Promise<void> })();
    try {
      const { port } = server.address() as AddressInfo;
      const request = lean.request as (
        url: string,
        options: object,
      ) => Promise<{ statusCode: number; body: { text(): Promise<string> } }>;
      const response = await request(`http://127.0.0.1:${port}/apis/x?watch=1`, {
        method: 'PATCH',
        body: '{}',
        dispatcher: agent,
      });
      expect(response.statusCode).toBe(200);
      expect(await response.body.text()).toBe('PATCH /apis/x?watch=1');
    } finally {
      await agent.close();
      server.close();
    }
  });
});

describe('the operator started from the bundle', () => {
  let work: string;
  let kubeconfig: string;
  let recorder: string;
  let silent: NetServer;
  let silentKubeconfig: string;
  const sockets: Socket[] = [];

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'operator-bundle-'));
    // A cluster address where nothing listens.
    const port = await freePort();
    kubeconfig = join(work, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'none',
        clusters: [{ name: 'none', cluster: { server: `https://127.0.0.1:${port}` } }],
        users: [{ name: 'none', user: { token: 'not-a-real-token' } }],
        contexts: [{ name: 'none', context: { cluster: 'none', user: 'none', namespace: 'website-system' } }],
      }),
    );
    // An address that accepts connections and never says a word.
    silent = createNetServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentKubeconfig = join(work, 'kubeconfig-silent');
    writeFileSync(
      silentKubeconfig,
      readFileSync(kubeconfig, 'utf8').replace(
        `127.0.0.1:${port}`,
        `127.0.0.1:${(silent.address() as AddressInfo).port}`,
      ),
    );
    // Node's module hooks (--import, before the operator): every file the process loads, on stderr.
    recorder = join(work, 'record-loads.mjs');
    writeFileSync(
      recorder,
      [
        "import { registerHooks } from 'node:module';",
        "import { writeSync } from 'node:fs';",
        "registerHooks({ load(url, context, next) { if (url.startsWith('file:')) writeSync(2, `loaded ${url}\\n`); return next(url, context); } });",
      ].join('\n'),
    );
  });

  /** The bundle's files the operator loaded by the time it listens, with `env`; then it is stopped. */
  async function loadedFiles(env: Record<string, string>): Promise<string[]> {
    const operator = await OperatorProcess.start(
      'bundle-test',
      kubeconfig,
      { NODE_OPTIONS: `--import=${recorder}`, ...env },
      { entrypoint: build.entry },
    );
    try {
      return operator.stderr
        .filter((line) => line.startsWith('loaded file://'))
        .map((line) => relative(OPERATOR_BUILD_DIR, new URL(line.slice('loaded '.length)).pathname));
    } finally {
      await operator.kill();
    }
  }

  const webhookChunk = () =>
    relative(OPERATOR_BUILD_DIR, join(ROOT, chunkOf(build.metafile, 'operator/src/webhook/webhook-component.ts')));
  const sdkChunk = () =>
    relative(OPERATOR_BUILD_DIR, join(ROOT, chunkOf(build.metafile, 'operator/src/observability/tracing-sdk.ts')));

  test('with the webhook off and no OTLP endpoint, loads neither chunk: only the entry and its static imports', async () => {
    const loaded = await loadedFiles({ WEBHOOK_ENABLED: 'false' });
    const atStart = [...loadedAtStart(build.metafile, entryOutput)].map((output) =>
      relative(OPERATOR_BUILD_DIR, join(ROOT, output)),
    );
    expect(loaded.sort()).toEqual(atStart.sort());
    expect(loaded).not.toContain(webhookChunk());
    expect(loaded).not.toContain(sdkChunk());
  }, 60_000);

  // Nothing is in flight that could finish: the informers' lists, the wait for their caches and
  // the campaign for the Lease must all end at the stop. 20 s only tells a prompt stop from the
  // 25 s shutdown timeout (SHUTDOWN_TIMEOUT_SECONDS); speed is for the benchmarks.
  test.each([
    ['refusing connections, without leader election', () => kubeconfig, { LEADER_ELECTION: 'false' }],
    ['refusing connections, campaigning for the Lease', () => kubeconfig, { LEADER_ELECTION: 'true' }],
    // Its requests hang: only aborting them ends them before their 30 s timeout.
    [
      'accepting connections and never answering, campaigning for the Lease',
      () => silentKubeconfig,
      { LEADER_ELECTION: 'true' },
    ],
  ])(
    'with the API server unreachable (%s), SIGTERM stops it cleanly: exit 0, "stopped", no timeout',
    async (_, config, env) => {
      const operator = await OperatorProcess.start(
        'shutdown-test',
        config(),
        { WEBHOOK_ENABLED: 'false', ...env },
        { entrypoint: build.entry },
      );
      try {
        // It is running: listing, or waiting for the API server to answer.
        await new Promise((r) => setTimeout(r, 1_000));
        const exit = await Promise.race([
          operator.stop(),
          new Promise<string>((resolve) => setTimeout(() => resolve('still running after 20 s'), 20_000)),
        ]);
        const messages = operator.logs.map((l) => l.msg);
        expect(exit).toBe(0);
        expect(messages).not.toContain('shutdown timed out; exiting');
        expect(messages[messages.length - 1]).toBe('stopped');
      } finally {
        await operator.kill();
      }
    },
    60_000,
  );

  /**
   * The bundle started with `env` and its stdout on a pipe the test reads only when it chooses
   * (SlowPipe); `fillFirst` fills that pipe before the process starts.
   */
  function startWithSlowStdout(env: Record<string, string>, fillFirst = false) {
    const pipe = new SlowPipe();
    if (fillFirst) pipe.fill();
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', build.entry], {
      env: {
        PATH: process.env.PATH,
        KUBECONFIG: kubeconfig,
        POD_NAME: 'slow-stdout-test',
        METRICS_PORT: '0',
        HEALTH_PORT: '0',
        WEBHOOK_ENABLED: 'false',
        LEADER_ELECTION: 'false',
        ...env,
      },
      stdio: ['ignore', pipe.writeFd, 'pipe'],
    });
    pipe.closeWriteEnd();
    const stderr: string[] = [];
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    const ended = () => child.exitCode !== null || child.signalCode !== null;
    /** Waits until the process has exited or is blocked writing its stdout, then reads all it wrote. */
    const readLate = async () => {
      // A process whose log is still being written in the background meets neither: it waits on
      // the test, which waits on it, and this times out.
      await eventually(
        'the operator to exit or to block writing its log',
        () => exitedOrBlockedOnStdout(child.pid!, ended),
        30_000,
      );
      const lines = await pipe.readToEnd();
      const code = await closed;
      return { code, stderr: stderr.join(''), entries: lines.map((line) => JSON.parse(line) as LogLine) };
    };
    return { child, pipe, readLate };
  }

  // The way it failed: under load, "stopped" was still being written in the background when the
  // process exited, and never reached the pipe. A full pipe holds every write until the test reads,
  // so a write the exit does not wait for is lost (or lands out of order) every time.
  test('with its stdout read late, SIGTERM: every line arrives, in order, "stopped" last', async () => {
    const { child, pipe, readLate } = startWithSlowStdout({});
    try {
      await eventually('the operator to log that it started', () => {
        pipe.drain();
        return pipe.lines().some((line) => line.includes('"operator started"'));
      });
      pipe.fill();
      child.kill('SIGTERM');
      const { code, entries, stderr } = await readLate();
      const messages = entries.map((entry) => entry.msg);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(messages.filter((msg) => msg.startsWith('shutting down') || msg === 'stopped')).toEqual([
        'shutting down: finishing reconciles in flight, releasing the lease',
        'stopped',
      ]);
      expect(messages[messages.length - 1]).toBe('stopped');
    } finally {
      child.kill('SIGKILL');
      pipe.close();
    }
  }, 60_000);

  test('with its stdout full before it starts, a fatal start error still reaches the log', async () => {
    const { child, pipe, readLate } = startWithSlowStdout({ LEADER_ELECTION: 'sometimes' }, true);
    try {
      const { code, entries } = await readLate();
      expect(code).toBe(2);
      expect(entries).toEqual([
        expect.objectContaining({
          level: 'fatal',
          msg: 'LEADER_ELECTION="sometimes" is not valid: expected true or false',
        }),
      ]);
    } finally {
      child.kill('SIGKILL');
      pipe.close();
    }
  }, 60_000);

  test('with both on, loads both chunks (the recorder sees dynamic imports)', async () => {
    const loaded = await loadedFiles({
      WEBHOOK_ENABLED: 'true',
      WEBHOOK_PORT: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
    });
    expect(loaded).toEqual(expect.arrayContaining([OPERATOR_ENTRY, webhookChunk(), sdkChunk()]));
  }, 60_000);
});
