// Every program a lane of `npm test` starts is installed by that lane (scripts/system-deps.txt), built
// by scripts/binaries.sh, or part of the base system. A lane that runs a program another lane
// happens to install passes or fails by which lane gets there first (the trace lane's chaos test ran
// iptables, which only the isolated lane's image build installed): this test reads what each lane
// starts from its files, instead of waiting for a fresh machine to show it.
//
// What a lane's files are: its test files and global setup (test/<project>/), the modules they
// import, the scripts they run (a script path in a spawn call's arguments, directly or through a
// constant), and the scripts those run or source. A script that installs its own list
// (`scripts/system-deps.sh <group>`, as scripts/image.sh and scripts/real-node.sh do) is checked
// against that list instead of the lanes that run it.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { Language, type Node, Parser } from 'web-tree-sitter';
import { walkthroughSteps } from '../../harness/docs/walkthrough.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Programs every machine that runs `npm test` has: Debian's essential packages (coreutils, bash,
 * grep, sed, findutils, tar, gzip, util-linux, debianutils, dpkg, hostname, mawk) and the README's
 * own prerequisites (Node.js with npm, Go, git).
 */
const BASE = new Set(
  `awk basename bash cat chmod chown chroot cmp comm cp cut date dd df diff dirname du echo env expr false
  find flock getconf getent grep gzip head hostname id install kill ln ls mkdir mkfifo mktemp mount
  mountpoint mv nice nohup nproc od printf pwd readlink realpath rm rmdir sed seq setpriv setsid sh
  sha256sum sleep sort stat tail tar tee test timeout touch tr true umount uname uniq unshare wc xargs
  nsenter dpkg apt-get /bin/sh node npm npx go git`
    .split(/\s+/)
    .filter(Boolean),
);

/** bash's own commands, which no package installs. */
const BUILTINS = new Set(
  `alias bg bind break builtin cd command continue declare dirs disown enable eval exec exit export fc fg
  getopts hash jobs let local logout mapfile popd pushd read readarray readonly return set shift shopt
  source suspend times trap type typeset ulimit umask unalias unset wait`
    .split(/\s+/)
    .filter(Boolean),
);

/** The lanes: jest projects, each of which installs its own list before its first test (scripts/test.sh). */
const LANES = [...readFileSync(join(ROOT, 'jest.config.js'), 'utf8').matchAll(/displayName: '([a-z-]+)'/g)].map(
  (m) => m[1],
);

interface Dependency {
  readonly program: string;
  readonly pkg: string;
  readonly groups: readonly string[];
}

const DEPENDENCIES: Dependency[] = readFileSync(join(ROOT, 'scripts/system-deps.txt'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() && !line.startsWith('#'))
  .map((line) => {
    const [program, pkg, ...groups] = line.trim().split(/\s+/);
    return { program, pkg, groups };
  });
const DECLARED = new Set(DEPENDENCIES.map((d) => d.program));
const listOf = (group: string) => new Set(DEPENDENCIES.filter((d) => d.groups.includes(group)).map((d) => d.program));

/** The names scripts/binaries.sh builds, in its own words (its message for an unknown name). */
function builtBinaries(): Set<string> {
  const r = spawnSync('bash', [join(ROOT, 'scripts/binaries.sh'), 'no-such-binary'], { encoding: 'utf8' });
  const known = /known: ([^;]+);/.exec(r.stderr)?.[1];
  if (!known) throw new Error(`scripts/binaries.sh did not list its binaries: ${r.stderr}`);
  return new Set(known.split(/\s+/).filter(Boolean));
}

// tree-sitter's bash grammar: the commands of a script as bash parses them (heredocs, quotes,
// command substitutions and functions included), not as a regular expression would guess.
await Parser.init();
const bash = new Parser();
bash.setLanguage(await Language.load(createRequire(import.meta.url).resolve('tree-sitter-bash/tree-sitter-bash.wasm')));

/** Words before a command that run the command after them: skip them (and their options). */
const WRAPPERS = new Set(['sudo', '$sudo', 'exec', 'nice', 'setsid', 'env', 'nohup', 'xargs', 'command']);

interface Script {
  /** The commands it runs by name. */
  readonly commands: Set<string>;
  /** The functions it defines. */
  readonly functions: Set<string>;
  /** Other scripts it runs or sources. */
  readonly scripts: string[];
  /** The group it installs itself (`scripts/system-deps.sh <group>`), if any. */
  readonly installs?: string;
  /** The npm scripts it runs (`npm run <name>`). */
  readonly npm: string[];
}

const SCRIPT_PATH = /(?:^|[/'"\s$}])((?:scripts\/|lib\/)?[\w-]+(?:\/[\w-]+)*\.sh)\b/g;
/** A TypeScript program a command runs (`node scripts/tracing.ts up`). */
const TS_PROGRAM = /(?:^|\s)((?:scripts|operator|harness)\/[\w./-]+\.ts)\b/g;
const PACKAGE_SCRIPTS: Record<string, string> = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;

/** The repository file a script reference names, relative to the root or to the scripts folder. */
function scriptFile(name: string, from?: string): string | undefined {
  const candidates = [name, join('scripts', name), ...(from ? [join(dirname(from), name)] : [])];
  return candidates.find((candidate) => candidate.endsWith('.sh') && existsSync(join(ROOT, candidate)));
}

function readScript(file: string): Script {
  return readScriptText(readFileSync(join(ROOT, file), 'utf8'), file);
}

function readScriptText(text: string, file = 'scripts/inline.sh'): Script {
  const tree = bash.parse(text);
  if (!tree) throw new Error(`tree-sitter could not parse ${file}`);
  const commands = new Set<string>();
  const functions = new Set<string>();
  const scripts: string[] = [];
  const npm: string[] = [];
  let installs: string | undefined;
  const visit = (node: Node): void => {
    if (node.type === 'function_definition') functions.add(node.childForFieldName('name')!.text);
    if (node.type === 'command') {
      const words = [node.childForFieldName('name'), ...node.childrenForFieldName('argument')]
        .filter((word): word is Node => word !== null)
        .map((word) => word.text.replace(/^["']|["']$/g, ''));
      let i = 0;
      while (WRAPPERS.has(words[i] ?? '')) {
        if (words[i] === 'command' && /^-[vV]$/.test(words[i + 1] ?? '')) i = words.length;
        else i++;
        while (words[i]?.startsWith('-')) i++;
      }
      const name = words[i];
      if (name && /^[a-z][\w.+-]*$/.test(name)) commands.add(name);
      const ran = words.slice(i).join(' ');
      for (const m of ran.matchAll(SCRIPT_PATH)) {
        const script = scriptFile(m[1], file);
        if (script) scripts.push(script);
      }
      for (const m of ran.matchAll(TS_PROGRAM)) scripts.push(m[1]);
      if (name === 'npm' && words[i + 1] === 'run' && words[i + 2]) npm.push(words[i + 2]);
      const install = /system-deps\.sh\S*\s+([\w-]+)/.exec(ran);
      if (install && install[1] !== 'all') installs = install[1];
    }
    for (const child of node.namedChildren) if (child) visit(child);
  };
  visit(tree.rootNode);
  return { commands, functions, scripts, installs, npm };
}

interface Reached {
  /** Program names started, by a file that starts them. */
  readonly started: Map<string, string>;
  /** Programs of system-deps.txt a file names in a string, by that file (a wrapper's argument, say). */
  readonly named: Map<string, string>;
  /** Scripts run, which install their own group. */
  readonly selfInstalling: Map<string, string>;
}

const RUNNER = /^(run|start|spawn|exec)(Process|Daemon|Server)?$/;
/** `Walkthrough.open('<page>')`, or a test's `walkthrough('<page>')` helper around it. */
const WALKTHROUGH_CALL = /^(Walkthrough\.open|walkthrough)$/;
const CALLS = new Set(['execFileSync', 'execFile', 'spawnSync', 'spawn', 'execa', 'execFileAsync']);

/** One TypeScript file: the modules it imports, what it starts, and the scripts it runs. */
function readTypeScript(file: string, out: Reached, queue: string[]): void {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  // Relative imports and re-exports; an `import type` loads nothing at run time, so starts nothing.
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    if (ts.isImportDeclaration(statement) ? statement.importClause?.isTypeOnly : statement.isTypeOnly) continue;
    const from = statement.moduleSpecifier;
    if (from && ts.isStringLiteral(from) && from.text.startsWith('.'))
      queue.push(relative(ROOT, join(ROOT, dirname(file), from.text)));
  }
  // Constants: a name's string value (`const RUNTIME = process.env.X ?? 'runc'`) and the scripts its
  // initializer names (`const script = join(ROOT, 'scripts/binaries.sh')`).
  const values = new Map<string, string>();
  const scriptsOf = new Map<string, string[]>();
  const value = (node: ts.Node | undefined): string | undefined => {
    if (!node) return undefined;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken) {
      return value(node.right);
    }
    if (ts.isIdentifier(node)) return values.get(node.text);
    return undefined;
  };
  const scriptsIn = (node: ts.Node): string[] => {
    const found: string[] = [];
    const walk = (n: ts.Node): void => {
      if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateHead(n)) {
        for (const m of n.text.matchAll(SCRIPT_PATH)) {
          const script = scriptFile(m[1]);
          if (script) found.push(script);
        }
      }
      if (ts.isIdentifier(n)) found.push(...(scriptsOf.get(n.text) ?? []));
      ts.forEachChild(n, walk);
    };
    walk(node);
    return found;
  };
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      const v = value(node.initializer);
      if (v !== undefined) values.set(node.name.text, v);
      scriptsOf.set(node.name.text, scriptsIn(node.initializer));
    }
    if (ts.isCallExpression(node)) {
      const callee = ts.isIdentifier(node.expression)
        ? node.expression.text
        : ts.isPropertyAccessExpression(node.expression)
          ? node.expression.name.text
          : '';
      // A declared program passed to a wrapper that starts processes (`run('redis', 'redis-server', ...)`).
      for (const arg of RUNNER.test(callee) ? node.arguments : []) {
        if ((ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)) && DECLARED.has(arg.text)) {
          out.named.set(arg.text, file);
        }
      }
      // A docs page run as a walkthrough (harness/docs/walkthrough.ts): its shell blocks run too.
      const page = value(node.arguments[0]);
      if (WALKTHROUGH_CALL.test(node.expression.getText()) && page?.endsWith('.md')) queue.push(page);
      if (CALLS.has(callee)) {
        const program = value(node.arguments[0]);
        if (program !== undefined) out.started.set(program, file);
        for (const arg of node.arguments) queue.push(...scriptsIn(arg));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

/** What a lane's files start, through imports and the scripts they run. */
function reach(roots: string[]): Reached {
  const out: Reached = { started: new Map(), named: new Map(), selfInstalling: new Map() };
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file) || (!file.startsWith('npm run ') && !existsSync(join(ROOT, file)))) continue;
    seen.add(file);
    if (file.endsWith('.ts')) {
      readTypeScript(file, out, queue);
      continue;
    }
    let script: Script;
    if (file.endsWith('.sh')) script = readScript(file);
    else if (file.endsWith('.md'))
      script = readScriptText(
        walkthroughSteps(file)
          .map((step) => step.text)
          .join('\n'),
        file,
      );
    else if (file.startsWith('npm run ')) {
      const name = file.slice('npm run '.length);
      script = readScriptText([PACKAGE_SCRIPTS[`pre${name}`], PACKAGE_SCRIPTS[name]].filter(Boolean).join('\n'), file);
    } else continue;
    if (script.installs) {
      out.selfInstalling.set(file, script.installs);
      continue;
    }
    const shellScripts = script.scripts.filter((s) => s.endsWith('.sh'));
    const functions = new Set([...script.functions, ...shellScripts.flatMap((s) => [...readScript(s).functions])]);
    for (const command of script.commands) if (!functions.has(command)) out.started.set(command, file);
    queue.push(...script.scripts, ...script.npm.map((name) => `npm run ${name}`));
  }
  return out;
}

/** Programs `reached` starts or names that are missing from `list`, as "program (file)". */
function missingFrom(list: Set<string>, reached: Reached, built: Set<string>): string[] {
  const used = new Map([...reached.named, ...reached.started]);
  return [...used]
    .filter(([program]) => !list.has(program) && !built.has(program) && !BASE.has(program) && !BUILTINS.has(program))
    .map(([program, file]) => `${program} (${file})`)
    .sort();
}

const built = builtBinaries();
const SCRIPTS = readdirSync(join(ROOT, 'scripts'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.sh'))
  .map((file) => join('scripts', file));

describe('every program a lane starts is installed by that lane (scripts/system-deps.txt)', () => {
  test('system-deps.txt names only lanes and self-installing scripts, each program once', () => {
    const groups = new Set([
      ...LANES,
      ...SCRIPTS.map((file) => readScript(file).installs).filter((g): g is string => g !== undefined),
    ]);
    expect(DEPENDENCIES.flatMap((d) => d.groups.filter((group) => !groups.has(group)))).toEqual([]);
    const programs = DEPENDENCIES.map((d) => d.program);
    expect(programs.filter((p, i) => programs.indexOf(p) !== i)).toEqual([]);
    expect(DEPENDENCIES.filter((d) => !d.pkg || d.groups.length === 0)).toEqual([]);
  });

  test.each(LANES)('the %s lane installs what its files start', (lane) => {
    const roots = readdirSync(join(ROOT, 'test', lane), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && file !== 'system-deps.test.ts')
      .map((file) => join('test', lane, file));
    expect(missingFrom(listOf(lane), reach(roots), built)).toEqual([]);
  });

  test.each(SCRIPTS.filter((file) => readScript(file).installs))('%s installs what it starts', (file) => {
    const group = readScript(file).installs!;
    const { started, named } = reach([]);
    const script = readScript(file);
    for (const command of script.commands) started.set(command, file);
    const sourced = new Set(
      script.scripts.filter((s) => s.endsWith('.sh')).flatMap((s) => [...readScript(s).functions]),
    );
    for (const name of [...script.functions, ...sourced]) started.delete(name);
    expect(missingFrom(listOf(group), { started, named, selfInstalling: new Map() }, built)).toEqual([]);
  });

  test('the trace lane reaches the chaos harness, which runs iptables: a list without it fails', () => {
    const reached = reach(['test/trace/chaos.test.ts']);
    expect(reached.started.get('iptables')).toBe('harness/chaos/trace-chaos.ts');
    const withoutIptables = new Set([...listOf('trace')].filter((program) => program !== 'iptables'));
    expect(missingFrom(withoutIptables, reached, built)).toContain('iptables (harness/chaos/trace-chaos.ts)');
  });

  test('bash commands are read as bash parses them: heredocs, quotes, wrappers and functions', () => {
    const script = readScriptText(
      `f() { ls; }\nx=1 sudo -E iptables -L | grep "a $(jq -r .x)"\ncommand -v nginx\nexec setsid redis-server\n` +
        `cat <<'EOF'\nconntrack -L\nEOF\necho "runc is here"\nf\n`,
    );
    expect([...script.commands].sort()).toEqual(['cat', 'echo', 'f', 'grep', 'iptables', 'jq', 'ls', 'redis-server']);
    expect([...script.functions]).toEqual(['f']);
  });
});
