#!/usr/bin/env python3
"""Aggregate decode throughput of `jitllm serve` with N concurrent clients (issue 9's GPU table).

Standard library only (the GPU host has no npm). Each client loops POST /v1/completions with a
fixed prompt, max_tokens M, temperature T (default 0: greedy; else top_k 40, top_p 0.95 and a
seed per request), non-streaming, until the time is up; the aggregate is the sum of
usage.completion_tokens over the wall time of the window. Loopback only.

usage: serve-load.py --port P --clients 1,8,32,64 [--seconds 20] [--max-tokens 128] [--temperature T]
"""
import argparse, json, threading, time, urllib.request

MODEL = None
TEMPERATURE = 0.0
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

def run(port, clients, seconds, max_tokens):
    stop = time.time() + seconds
    done = [0] * clients
    reqs = [0] * clients
    errors = []
    def client(i):
        while time.time() < stop:
            try:
                c, _ = one(port, max_tokens, f"Request {i}: once upon a time")
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
    a = ap.parse_args()
    MODEL = model_id(a.port)
    TEMPERATURE = a.temperature
    one(a.port, 8, "warm up")
    print("| clients | requests | completion tokens | wall s | aggregate tok/s | per client tok/s | errors |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in a.clients.split(",")]:
        tok, reqs, wall, errs = run(a.port, n, a.seconds, a.max_tokens)
        print(f"| {n} | {reqs} | {tok} | {wall:.1f} | {tok / wall:.1f} | {tok / wall / n:.1f} | {len(errs)} |", flush=True)
        for e in errs[:3]: print("  error:", e)
