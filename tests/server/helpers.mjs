// Helpers for the server tests: start `jitllm serve` on a free loopback port (--port 0; the port is
// read from its log), wait until it is ready, stop it with a signal. Loopback only.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import OpenAIModule from 'openai';

export const OpenAI = OpenAIModule.default || OpenAIModule;

export const BIN = process.env.JITLLM_BIN;
if (!BIN) throw new Error('JITLLM_BIN must name the jitllm binary');

export async function startServer(args = [], { readyTimeoutMs = 60000, env = {} } = {}) {
  const proc = spawn(BIN, ['serve', '--host', '127.0.0.1', '--port', '0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let log = '';
  let port = 0;
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server not ready after ${readyTimeoutMs} ms:\n${log}`)),
                             readyTimeoutMs);
    proc.stderr.on('data', (d) => {
      log += d.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) port = Number(m[1]);
      if (port && log.includes('ready:')) {
        clearTimeout(timer);
        resolve();
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before it was ready:\n${log}`));
    });
  });
  await ready;
  const base = `http://127.0.0.1:${port}`;
  return {
    proc,
    port,
    base,
    log: () => log,
    client: (opts = {}) => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, ...opts }),
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      const exited = once(proc, 'exit');
      proc.kill(signal);
      const [code] = await exited;
      return code;
    },
  };
}

// Polls until pred() is true (deadline only guards against a hang; it asserts nothing about time).
export async function waitFor(pred, { deadlineMs = 20000, everyMs = 50 } = {}) {
  const end = Date.now() + deadlineMs;
  for (;;) {
    if (await pred()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}
