#!/usr/bin/env python3
"""Load generator for `strata serve`: C concurrent streaming completions, repeated for each C.

Reports aggregate generation tokens/s (all streams' tokens over the wall time of the round),
time to first token and inter-token latency p50/p99 as the clients see them. Standard library
only. Usage: bench_serve_client.py URL [--concurrency 1,4,8,16] [--tokens 64] [--rounds 2]
"""
import argparse
import http.client
import json
import threading
import time
import urllib.parse

PROMPTS = [
    "Once upon a time", "The little dog", "Lily wanted to", "One day, Tom", "The sun was",
    "Mom said that", "There was a big", "Ben and his friend", "In a small town", "The cat sat",
    "A girl named Sue", "The old man", "It was a rainy day", "The bird flew", "Max liked to",
    "At the park",
]


def percentile(values, q):
    """Nearest-rank percentile of a list (q in 0..100)."""
    if not values:
        return float("nan")
    s = sorted(values)
    rank = max(1, int(-(-q * len(s) // 100)))
    return s[rank - 1]


SCHEMA = None  # --json-schema: every request constrained to it (response_format json_schema)


def one_stream(url, prompt, tokens, out):
    parts = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    request = {"prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True,
               "stream": True, "logprobs": 0, "stream_options": {"include_usage": True}}
    if SCHEMA is not None:
        # A constrained reply may end before max_tokens: its grammar decides where it can.
        request["ignore_eos"] = False
        request["response_format"] = {"type": "json_schema",
                                      "json_schema": {"name": "bench", "schema": SCHEMA}}
    body = json.dumps(request)
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        out.append({"error": resp.status})
        return
    times = []  # one per generated token
    n_tokens = 0
    buf = b""
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            break
        chunk = json.loads(data)
        now = time.perf_counter()
        if chunk.get("usage"):
            n_tokens = chunk["usage"]["completion_tokens"]
        for choice in chunk.get("choices", []):
            lp = choice.get("logprobs")
            count = len(lp["tokens"]) if lp else 0
            times.extend([now] * count)
    end = time.perf_counter()
    conn.close()
    out.append({"start": start, "end": end, "ttft": times[0] - start if times else float("nan"),
                "itl": [b - a for a, b in zip(times, times[1:]) if b > a] +
                       [0.0] * sum(1 for a, b in zip(times, times[1:]) if b <= a),
                "tokens": n_tokens or len(times)})


def run_round(url, concurrency, tokens):
    results = []
    threads = [threading.Thread(target=one_stream,
                                args=(url, PROMPTS[i % len(PROMPTS)], tokens, results))
               for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r for r in results if "error" in r]
    ok = [r for r in results if "error" not in r]
    wall = max(r["end"] for r in ok) - min(r["start"] for r in ok)
    total = sum(r["tokens"] for r in ok)
    ttft = [r["ttft"] for r in ok]
    itl = [x for r in ok for x in r["itl"]]
    return {"concurrency": concurrency, "tokens": total, "wall_s": wall, "tok_s": total / wall,
            "ttft_p50": percentile(ttft, 50), "ttft_p99": percentile(ttft, 99),
            "itl_p50": percentile(itl, 50), "itl_p99": percentile(itl, 99),
            "errors": len(errors)}


def server_itl(url):
    """The server's own inter-token latency quantiles over its last minute (/metrics), measured
    per token as the engine emits it: unlike the client's, not bunched by text held back until
    its UTF-8 completes (random-weight models' replies are mostly partial characters)."""
    parts = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    out = {}
    for line in text.splitlines():
        if line.startswith("strata:inter_token_latency_window_seconds{"):
            q = line.split('quantile="')[1].split('"')[0]
            out[q] = float(line.rsplit(" ", 1)[1])
    return out.get("0.5", float("nan")), out.get("0.99", float("nan"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--concurrency", default="1,4,8,16")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2, help="rounds per level; the best is kept")
    ap.add_argument("--json-schema", help="JSON Schema file (or a JSONSchemaBench file with a "
                    "'schema' member) every request is constrained to")
    args = ap.parse_args()
    if args.json_schema:
        global SCHEMA
        with open(args.json_schema) as f:
            doc = json.load(f)
        SCHEMA = doc["schema"] if isinstance(doc, dict) and "schema" in doc else doc
    run_round(args.url, 1, 4)  # warm-up
    print("| streams | tokens | wall s | aggregate tok/s | speedup | TTFT p50 ms | TTFT p99 ms "
          "| ITL p50 ms | ITL p99 ms | server ITL p50 ms | server ITL p99 ms | errors |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = None
    for c in [int(x) for x in args.concurrency.split(",")]:
        best = max((run_round(args.url, c, args.tokens) for _ in range(args.rounds)),
                   key=lambda r: r["tok_s"])
        base = base or best["tok_s"]
        s50, s99 = server_itl(args.url)  # the last minute: this level's rounds, mostly
        print(f"| {c} | {best['tokens']} | {best['wall_s']:.2f} | {best['tok_s']:.1f} "
              f"| {best['tok_s'] / base:.2f}x | {best['ttft_p50'] * 1e3:.0f} "
              f"| {best['ttft_p99'] * 1e3:.0f} | {best['itl_p50'] * 1e3:.1f} "
              f"| {best['itl_p99'] * 1e3:.1f} | {s50 * 1e3:.1f} | {s99 * 1e3:.1f} "
              f"| {best['errors']} |", flush=True)


if __name__ == "__main__":
    main()
