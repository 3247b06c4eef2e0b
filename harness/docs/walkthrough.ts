// A docs page a reader follows command by command, run as written: its shell blocks in order, in
// a copy of the repository's working tree (what a fresh clone holds), with only what the page tells
// the reader to set. A page says it is one with a line `<!-- walkthrough: test/<lane>/<file> -->`
// naming its test; a block preceded by `<!-- step: background -->` is one the page runs in a second
// shell until the reader stops it (`npm run operator`), which the runner starts in the background
// and stops at the end; a block anywhere on the page preceded by `<!-- save: <file> -->` is one the
// page tells the reader to save as that file (relative to the repository), which the runner does
// before the first step. Each step runs in a bash of its own with `set -e` (a failing command fails
// the step, as it would stop a reader), starting in the directory and with the exported variables
// the step before left, as one shell would keep them.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClusterAccess } from '../cluster/kubectl.ts';
import { eventually } from '../process/poll.ts';
import { stopProcesses } from '../process/processes.ts';
import { blocks, SHELL_LANGS } from './markdown.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The marker of a walkthrough page, naming the test that runs it. */
export const WALKTHROUGH_MARKER = /^<!--\s*walkthrough:\s*(test\/[\w./-]+\.test\.ts)\s*-->$/m;

export interface Step {
  /** The line of the block's opening fence. */
  readonly line: number;
  readonly text: string;
  /** Run in a second shell, in the background, until the walkthrough ends. */
  readonly background: boolean;
}

export interface StepResult {
  readonly step: Step;
  /** Its standard output and error, interleaved as a terminal shows them. */
  readonly output: string;
}

/**
 * The steps of a page: the shell blocks of the section its marker is in (from the marker to the next
 * heading of that section's level or above; under the page's title, the whole page), in order.
 */
export function walkthroughSteps(page: string, root = ROOT): Step[] {
  const lines = readFileSync(join(root, page), 'utf8').split('\n');
  const marker = lines.findIndex((line) => WALKTHROUGH_MARKER.test(line));
  if (marker < 0)
    throw new Error(`${page} has no walkthrough marker (<!-- walkthrough: test/<lane>/<file>.test.ts -->)`);
  const level = (line: string) => /^(#+)\s/.exec(line)?.[1].length;
  let heading = marker;
  while (heading >= 0 && level(lines[heading]) === undefined) heading--;
  const sectionLevel = heading >= 0 ? level(lines[heading])! : 1;
  let end = lines.findIndex((line, i) => i > marker && (level(line) ?? Number.POSITIVE_INFINITY) <= sectionLevel);
  if (end < 0) end = lines.length;
  return blocks(root, page)
    .filter((block) => SHELL_LANGS.includes(block.lang) && block.line > marker + 1 && block.line <= end)
    .map((block) => ({ line: block.line, text: block.text, background: block.comments.includes('step: background') }));
}

/** The pages marked as walkthroughs, with the test each names. */
export function walkthroughPages(pages: readonly string[], root = ROOT): { page: string; test: string }[] {
  return pages.flatMap((page) => {
    const marker = WALKTHROUGH_MARKER.exec(readFileSync(join(root, page), 'utf8'));
    return marker ? [{ page, test: marker[1] }] : [];
  });
}

/**
 * The environment a reader starts with: their login's (home, user, locale) and their machine's
 * build settings (Go's caches and proxy, this project's cache), not the test's. npm's own
 * node_modules/.bin (Node 22, which `npm test` runs on) is not on the reader's PATH.
 */
function readerEnvironment(): Record<string, string> {
  const keep = ['HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'TMPDIR'];
  const machine = ['GOPROXY', 'GOFLAGS', 'GOMODCACHE', 'GOCACHE', 'GOPATH', 'XDG_CACHE_HOME', 'WEBSITE_STACK_CACHE'];
  // The background build of `npm test`: the project's scripts wait for it instead of racing it.
  const harness = ['WEBSITE_STACK_PREBUILD_PID'];
  const env: Record<string, string> = { TERM: 'dumb' };
  for (const name of [...keep, ...machine, ...harness]) if (process.env[name]) env[name] = process.env[name]!;
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules/.bin') && !dir.includes('node-gyp-bin'))
    .join(':');
  return env;
}

/**
 * A copy of the working tree (tracked files and new ones not ignored: what `git clone` of a commit
 * of it would hold) in a new directory under the system's temporary one, with the checkout's
 * node_modules linked in, so its npm scripts find everything installed. Removing it is the caller's.
 */
export function copyWorkingTree(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  })
    .split('\0')
    .filter((file) => file && existsSync(join(ROOT, file)));
  for (const file of new Set(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(ROOT, file), join(dir, file), { preserveTimestamps: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

export class Walkthrough {
  /**
   * A copy of the working tree (tracked files and new ones not ignored, as `git clone` of a commit
   * of it would hold) in a new directory, a git repository of that one commit on branch main, as a
   * clone is (Argo CD is served its committed branches), with the checkout's node_modules linked in:
   * the page's `npm run` lines find it installed, as they would after a reader's first `npm run`.
   * Then the blocks the page tells the reader to save, saved.
   */
  static open(page: string): Walkthrough {
    const dir = copyWorkingTree('walkthrough-');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
    git('init', '--quiet', '--initial-branch=main');
    // Not the linked node_modules: a clone has none (and Argo CD refuses a repository with a symlink
    // out of it; .gitignore's `node_modules/` matches a directory, not a link).
    git('add', '--all', '--', '.', ':(exclude)node_modules');
    git('-c', 'user.name=walkthrough', '-c', 'user.email=walkthrough@localhost', 'commit', '--quiet', '-m', 'clone');
    for (const block of blocks(ROOT, page)) {
      const save = block.comments.map((comment) => /^save:\s*(\S+)$/.exec(comment)?.[1]).find(Boolean);
      if (save) writeFileSync(join(dir, save), `${block.text}\n`);
    }
    return new Walkthrough(page, dir);
  }

  readonly steps: readonly Step[];
  /** Where the steps' environment, directory and output are kept (outside the copy). */
  private readonly state: string;
  /** Everything every step printed, for the failure messages and test-results/. */
  readonly log: string;
  private next = 0;
  private readonly background: { step: Step; pid: number; output: string }[] = [];

  /** The page, relative to the repository. */
  readonly page: string;
  /** The copy the steps run in. */
  readonly dir: string;

  private constructor(page: string, dir: string) {
    this.page = page;
    this.dir = dir;
    this.steps = walkthroughSteps(page);
    this.state = mkdtempSync(join(tmpdir(), 'walkthrough-state-'));
    writeFileSync(join(this.state, 'env'), '');
    writeFileSync(join(this.state, 'cwd'), dir);
    mkdirSync(join(ROOT, 'test-results', 'walkthroughs'), { recursive: true });
    this.log = join(ROOT, 'test-results', 'walkthroughs', `${page.replaceAll('/', '_')}.log`);
    writeFileSync(this.log, `# ${page}, run in ${dir}\n`);
  }

  /**
   * Runs the page's next step, which must be the one `expected` matches (so that a page edited out
   * of step with its test says so, rather than run the wrong assertions). Resolves with its output;
   * fails with the step's line and the end of its output when a command fails.
   */
  async run(expected: RegExp, options: { timeoutMs?: number } = {}): Promise<StepResult> {
    const step = this.take(expected);
    if (step.background) {
      const output = this.outputFile(step);
      const child = spawn('bash', ['-c', this.script(step)], {
        cwd: this.dir,
        env: readerEnvironment(),
        detached: true,
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      this.background.push({ step, pid: child.pid!, output });
      child.unref();
      return { step, output: '' };
    }
    const output = await this.exec(step, options.timeoutMs ?? 10 * 60_000);
    return { step, output };
  }

  /**
   * Runs a step that only reads (a `curl` of a query API, a `kubectl get`) again until `accept`
   * holds for its output, as a reader would when the page says "a few seconds later".
   */
  async runUntil(expected: RegExp, accept: (output: string) => boolean, timeoutMs = 60_000): Promise<StepResult> {
    const step = this.take(expected);
    let last = '';
    await eventually(
      `the step at ${this.page}:${step.line} to print what the page promises`,
      async () => {
        last = await this.exec(step, timeoutMs);
        return accept(last);
      },
      { timeoutMs, intervalMs: 1000, progress: () => `its last output:\n${tail(last)}` },
    );
    return { step, output: last };
  }

  /** The output so far of the background step at `line` (by the page's fence line). */
  backgroundOutput(expected: RegExp): string {
    const running = this.background.find((b) => expected.test(b.step.text));
    if (!running) throw new Error(`no background step of ${this.page} matches ${expected}`);
    return existsSync(running.output) ? readFileSync(running.output, 'utf8') : '';
  }

  /** The exported variables the steps so far have left, as the next step starts with them. */
  exported(): Record<string, string> {
    const out = execFileSync('bash', ['-c', `. "${join(this.state, 'env')}"; env -0`], {
      env: readerEnvironment(),
      encoding: 'utf8',
    });
    return Object.fromEntries(
      out
        .split('\0')
        .filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  }

  /**
   * The processes still running that the page started: the servers, clusters and nodes its steps
   * start name the copy on their command lines (pgrep -f). None, once the page's last step ran.
   */
  processesLeft(): string[] {
    const found = spawnSync('pgrep', ['-a', '-f', this.dir], { encoding: 'utf8' });
    // 0: some found, 1: none; anything else (pgrep missing, a bad pattern) is no answer.
    if (found.status !== 0 && found.status !== 1) throw new Error(`pgrep failed: ${found.error ?? found.stderr}`);
    return found.stdout.split('\n').filter(Boolean);
  }

  /** Steps the page has that were not run: none, once a test has walked the whole page. */
  remaining(): Step[] {
    return this.steps.slice(this.next);
  }

  /** Stops the background steps (the reader's Ctrl-C in their shells), keeping their output in the log. */
  async stopBackground(): Promise<void> {
    const stopping = this.background.splice(0);
    for (const b of stopping) {
      if (existsSync(b.output))
        appendFileSync(this.log, `\n## background step at line ${b.step.line}\n${readFileSync(b.output, 'utf8')}`);
    }
    await stopProcesses(Object.fromEntries(stopping.map((b) => [`line ${b.step.line}`, b.pid])));
  }

  /**
   * Stops the background steps, runs `cleanup` (what the page's last step would have stopped, for a
   * walkthrough that failed before it) in the copy, and removes the copy.
   */
  async close(cleanup = ''): Promise<void> {
    await this.stopBackground();
    if (cleanup && this.remaining().length > 0) {
      await this.exec({ line: 0, text: cleanup, background: false }, 5 * 60_000).catch((error) =>
        appendFileSync(this.log, `\n## cleanup failed\n${error}\n`),
      );
    }
    rmSync(this.dir, { recursive: true, force: true });
    rmSync(this.state, { recursive: true, force: true });
  }

  private take(expected: RegExp): Step {
    const step = this.steps[this.next];
    if (!step) throw new Error(`${this.page} has no step left; the test expects one matching ${expected}`);
    if (!expected.test(step.text)) {
      throw new Error(
        `${this.page}:${step.line}: the page's next step is not the one the test expects (${expected}):\n${step.text}`,
      );
    }
    this.next++;
    return step;
  }

  /** The step as one bash runs it: the environment and directory the last step left, then the block. */
  private script(step: Step): string {
    const block = join(this.state, `step-${step.line}.sh`);
    writeFileSync(block, `${step.text}\n`);
    const env = join(this.state, 'env');
    const cwd = join(this.state, 'cwd');
    const save = step.background
      ? ''
      : `trap 'export -p >"${env}.new" && mv "${env}.new" "${env}"; pwd >"${cwd}"' EXIT\n`;
    // A background step is a second shell: the reader's login environment, not the first shell's.
    const restore = step.background ? '' : `. "${env}"\n`;
    return `exec >"${this.outputFile(step)}" 2>&1\n${restore}cd "$(cat "${cwd}")"\n${save}set -e\n. "${block}"\n`;
  }

  /**
   * Runs a step to its end. Its output goes to a file, not a pipe: a server a step starts (the
   * cluster, the trace stack) keeps the step's descriptors open after the step has exited.
   */
  private exec(step: Step, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn('bash', ['-c', this.script(step)], {
        cwd: this.dir,
        env: readerEnvironment(),
        detached: true,
        stdio: 'ignore',
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }, timeoutMs);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        const file = this.outputFile(step);
        const output =
          (existsSync(file) ? readFileSync(file, 'utf8') : '') +
          (timedOut ? `\n[walkthrough] the step ran longer than ${timeoutMs / 1000} s: stopped\n` : '');
        appendFileSync(this.log, `\n## ${this.page}:${step.line} (exit ${code ?? signal})\n$ ${step.text}\n${output}`);
        if (code === 0) resolve(output);
        else
          reject(
            new Error(
              `${this.page}:${step.line}: the step failed (exit ${code ?? signal}):\n${step.text}\n--- its output, last lines:\n${tail(output)}`,
            ),
          );
      });
    });
  }

  private outputFile(step: Step): string {
    return join(this.state, `step-${step.line}.out`);
  }
}

/**
 * In a jest describe: a page's walkthrough in a fresh copy, and the cluster its steps start there;
 * `cleanup` stops what the page starts, should a step fail before its last.
 */
export function walkthrough(page: string, cleanup: string): { walk: () => Walkthrough; cluster: () => ClusterAccess } {
  let opened: Walkthrough | undefined;
  beforeAll(() => {
    opened = Walkthrough.open(page);
  });
  afterAll(() => opened?.close(cleanup), 10 * 60_000);
  const walk = () => opened!;
  return {
    walk,
    cluster: () => ({
      kubeconfig: join(walk().dir, '.cluster/kubeconfig'),
      kubectl: join(walk().dir, '.cluster/bin/kubectl'),
    }),
  };
}

function tail(text: string, lines = 40): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
