#!/usr/bin/env python3
"""Aggregate decode throughput of `jitllm serve` with N concurrent clients (issue 9's GPU table).

Standard library only (the GPU host has no npm). Each client loops POST /v1/completions with a
fixed prompt, max_tokens M, temperature T (default 0: greedy; else top_k 40, top_p 0.95 and a
seed per request), non-streaming, until the time is up; the aggregate is the sum of
usage.completion_tokens over the wall time of the window. Loopback only.

--prompt-words W gives every request a prompt of about W words (its own first words, so no two
requests share a prefix): the KV pool's load, e.g. 64 clients of ~1 k tokens with -c 8192.
--ttft-prefix-words W instead times the first token of two streamed requests in a row whose
prompts share a W-word system prompt: the second one's prefix blocks are reused (issue 53).

usage: serve-load.py --port P --clients 1,8,32,64 [--seconds 20] [--max-tokens 128] [--temperature T]
                     [--prompt-words W] | --ttft-prefix-words W
"""
import argparse, json, threading, time, urllib.request

WORDS = ("the cat saw a small red ball near the old tree and the dog ran after it while the kids "
         "laughed under a warm sun in the green park by the river").split()

def words(n, salt=""):
    """About n words of plain text, starting with `salt`."""
    return (salt + " " + " ".join(WORDS[i % len(WORDS)] for i in range(n))).strip()

MODEL = None
TEMPERATURE = 0.0
PROMPT_WORDS = 0
SEED = [0]

def model_id(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=60) as r:
        return json.loads(r.read())["data"][0]["id"]

def one(port, max_tokens, prompt):
    req = {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": TEMPERATURE}
    if TEMPERATURE > 0:
        SEED[0] += 1
        req.update({"top_k": 40, "top_p": 0.95, "seed": SEED[0]})
    body = json.dumps(req).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        j = json.loads(r.read())
    return j["usage"]["completion_tokens"], j["usage"]["prompt_tokens"]

def first_token_ms(port, prompt, max_tokens):
    """A streamed completion: milliseconds to its first content chunk, and its prompt tokens."""
    req = {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
           "stream_options": {"include_usage": True}}
    r = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(req).encode(),
                               headers={"Content-Type": "application/json"})
    t0 = time.time()
    first, n_prompt = None, 0
    with urllib.request.urlopen(r, timeout=600) as resp:
        for line in resp:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            j = json.loads(line[6:])
            if first is None and j.get("choices"):
                first = (time.time() - t0) * 1000
            if j.get("usage"):
                n_prompt = j["usage"]["prompt_tokens"]
    return first, n_prompt

def ttft(port, prefix_words, max_tokens):
    system = words(prefix_words, "You are a storyteller.")
    print("| request | prompt tokens | time to first token ms |")
    print("|---|---:|---:|")
    for i, q in enumerate([" Tell me about a cat.", " Tell me about a dog."]):
        ms, n = first_token_ms(port, system + q, max_tokens)
        print(f"| {'first' if i == 0 else 'second, same system prompt'} | {n} | {ms:.1f} |", flush=True)

def run(port, clients, seconds, max_tokens):
    stop = time.time() + seconds
    done = [0] * clients
    reqs = [0] * clients
    errors = []
    def client(i):
        while time.time() < stop:
            try:
                prompt = words(PROMPT_WORDS, f"Request {i} {reqs[i]}:") if PROMPT_WORDS else f"Request {i}: once upon a time"
                c, _ = one(port, max_tokens, prompt)
                done[i] += c
                reqs[i] += 1
            except Exception as e:  # counted, reported
                errors.append(repr(e))
                return
    t0 = time.time()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in ts: t.start()
    for t in ts: t.join()
    wall = time.time() - t0
    return sum(done), sum(reqs), wall, errors

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", default="1,8,32,64")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--prompt-words", type=int, default=0)
    ap.add_argument("--ttft-prefix-words", type=int, default=0)
    a = ap.parse_args()
    MODEL = model_id(a.port)
    TEMPERATURE = a.temperature
    PROMPT_WORDS = a.prompt_words
    one(a.port, 8, "warm up")
    if a.ttft_prefix_words:
        ttft(a.port, a.ttft_prefix_words, a.max_tokens)
        raise SystemExit(0)
    print("| clients | requests | completion tokens | wall s | aggregate tok/s | per client tok/s | errors |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in a.clients.split(",")]:
        tok, reqs, wall, errs = run(a.port, n, a.seconds, a.max_tokens)
        print(f"| {n} | {reqs} | {tok} | {wall:.1f} | {tok / wall:.1f} | {tok / wall / n:.1f} | {len(errs)} |", flush=True)
        for e in errs[:3]: print("  error:", e)
