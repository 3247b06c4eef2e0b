// A pipe to give a child process as its stdout, which the test reads only when it chooses: a
// reader that falls behind, as a busy machine's log collector does. It is a real pipe (a FIFO),
// not a Node stream, whose buffering would read ahead on the test's behalf.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class SlowPipe {
  /** The write end, for the child's stdio (close it here once the child has it: closeWriteEnd()). */
  readonly writeFd: number;
  private readonly readFd: number;
  private readonly dir: string;
  private fillerFd: number | undefined;
  private text = '';

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'slow-pipe-'));
    const fifo = join(this.dir, 'stdout');
    execFileSync('mkfifo', [fifo]);
    // The read end first, non-blocking, so that opening the write end does not wait for a reader.
    this.readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    this.writeFd = openSync(fifo, constants.O_WRONLY);
    this.fillerFd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  }

  /** Closes this process's copy of the write end (the child keeps its own). */
  closeWriteEnd(): void {
    closeSync(this.writeFd);
  }

  /**
   * Fills the pipe's buffer to the last byte with blank lines, so that the child's next write
   * blocks until the test reads. Blank lines, so that they never join a line of the child's.
   */
  fill(): void {
    const fd = this.fillerFd!;
    // Page-sized writes while they fit, then single bytes for the rest of the last page.
    for (const chunk of [Buffer.alloc(4096, '\n'), Buffer.from('\n')]) {
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw error;
        }
      }
    }
    // The filler's end closed, so that end of input means the child's end is closed too.
    closeSync(fd);
    this.fillerFd = undefined;
  }

  /** Reads what is in the pipe now, without waiting; returns false once every writer has closed it. */
  drain(): boolean {
    const buffer = Buffer.alloc(65536);
    for (;;) {
      let n: number;
      try {
        n = readSync(this.readFd, buffer);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return true;
        throw error;
      }
      if (n === 0) return false;
      this.text += buffer.toString('utf8', 0, n);
    }
  }

  /** Reads until every writer has closed the pipe (the child has exited), then the non-blank lines. */
  async readToEnd(): Promise<string[]> {
    if (this.fillerFd !== undefined) {
      closeSync(this.fillerFd);
      this.fillerFd = undefined;
    }
    while (this.drain()) await new Promise((resolve) => setTimeout(resolve, 10));
    return this.lines();
  }

  /** The non-blank lines read so far. */
  lines(): string[] {
    return this.text.split('\n').filter((line) => line.trim() !== '');
  }

  close(): void {
    if (this.fillerFd !== undefined) closeSync(this.fillerFd);
    closeSync(this.readFd);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Whether process `pid` has ended, or its main thread is blocked in write(2) on its stdout (as
 * /proc/<pid>/syscall shows: the syscall's number, 1 on x86-64 and 64 on arm64, then the fd).
 */
export function exitedOrBlockedOnStdout(pid: number, exited: () => boolean): boolean {
  if (exited()) return true;
  let syscall: string;
  try {
    syscall = readFileSync(`/proc/${pid}/syscall`, 'utf8');
  } catch {
    return exited(); // gone between the two looks
  }
  const [number, fd] = syscall.trim().split(' ');
  const write = process.arch === 'arm64' ? '64' : '1';
  return number === write && fd === '0x1';
}
