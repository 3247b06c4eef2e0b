// The fenced code blocks of the README and docs/ pages, for the tests that check or run them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Block {
  /** The page, relative to the repository. */
  readonly page: string;
  /** The line its opening fence is on (1-based). */
  readonly line: number;
  /** The fence's language: sh, yaml, ts, ... */
  readonly lang: string;
  /** Its content, without the fences and the list indentation. */
  readonly text: string;
  /**
   * The HTML comments directly above the fence (blank lines aside), e.g.
   * `step: background`: what a page says to a test and not to its reader.
   */
  readonly comments: readonly string[];
}

/** The fenced code blocks of a page under `root`, in order, each with the line it starts on. */
export function blocks(root: string, page: string): Block[] {
  const lines = readFileSync(join(root, page), 'utf8').split('\n');
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(```+)(\S*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const comments: string[] = [];
    for (let k = i - 1; k >= 0; k--) {
      if (lines[k].trim() === '') continue;
      const comment = /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(lines[k]);
      if (!comment) break;
      comments.unshift(comment[1]);
    }
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !lines[j].startsWith(`${indent}${fence}`); j++) body.push(lines[j].slice(indent.length));
    found.push({ page, line: i + 1, lang, text: body.join('\n'), comments });
    i = j;
  }
  return found;
}

/** The languages a shell block's fence may name. */
export const SHELL_LANGS: readonly string[] = ['sh', 'bash', 'shell'];
