#!/usr/bin/python3
# aiohttp_client.py - a Python asyncio streaming client for the side-by-side
# client benchmark (bench/client_cpu.py), written the way vLLM's benchmark
# sends and times requests (benchmarks/backend_request_func.py,
# async_request_openai_chat_completions, and `vllm bench serve`):
#
#  - one asyncio event loop; every request is a task created up front and
#    gathered, concurrency kept by an asyncio.Semaphore (limited_request_func);
#  - streamed POST with aiohttp (`session.post(url, json=payload, headers=...)`),
#    the body read line by line (`async for chunk_bytes in response.content`),
#    each non-empty line stripped of "data: ", "[DONE]" skipped, the rest
#    parsed with json.loads;
#  - time.perf_counter() at the start, at each chunk (TTFT for the first,
#    an inter-token latency for each later one), latency at the last chunk;
#    usage.completion_tokens taken when the server sends it.
#  By default one ClientSession with a TCPConnector limited to the concurrency
#  (keep-alive; what `vllm bench serve` does); --session-per-request opens a
#  session (so a connection) for every request, as benchmark_serving.py up to
#  vLLM 0.8 did.
#
# Run:   /usr/bin/python3 bench/aiohttp_client.py --url http://127.0.0.1:PORT/v1/chat/completions \
#            [--requests 2000] [--concurrency 64] [--isl 128] [--osl 64] [--session-per-request]
# Needs: Debian's python3-aiohttp (packaging/install-bench-deps.sh); use /usr/bin/python3.
# Prints one JSON object: completed and failed requests, output tokens,
# wall time and the process's CPU time (user + system, time.process_time)
# over the benchmark itself (interpreter start-up and imports excluded),
# and TTFT / ITL means, so a broken setup cannot pass as fast.

import argparse
import asyncio
import json
import sys
import time

try:
    import aiohttp
except ImportError:
    sys.exit("aiohttp_client: aiohttp is missing: packaging/install-bench-deps.sh "
             "(Debian's python3-aiohttp), and run it with /usr/bin/python3")

AIOHTTP_TIMEOUT = aiohttp.ClientTimeout(total=6 * 60 * 60)

# the prompt words of bench/client_cpu.py (the body headroom and wrk send)
WORDS = ("time year people way day man thing woman life child world school state family "
         "student group country problem hand part place case week company system program "
         "question work number night point home water room mother area money story fact "
         "month lot right study book eye job word business issue side kind head house "
         "service friend father power hour game line end member law car").split()


def prompt(isl):
    return " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(isl))


class Output:
    __slots__ = ("success", "ttft", "itl", "latency", "generated_text", "output_tokens",
                 "error")

    def __init__(self):
        self.success = False
        self.ttft = 0.0
        self.itl = []
        self.latency = 0.0
        self.generated_text = ""
        self.output_tokens = None
        self.error = ""


async def request_chat(session, url, payload, headers):
    """One streamed chat completion, read and timed as vLLM's client does."""
    output = Output()
    generated_text = ""
    ttft = 0.0
    st = time.perf_counter()
    most_recent_timestamp = st
    try:
        async with session.post(url=url, json=payload, headers=headers) as response:
            if response.status == 200:
                async for chunk_bytes in response.content:
                    chunk_bytes = chunk_bytes.strip()
                    if not chunk_bytes:
                        continue
                    chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                    if chunk != "[DONE]":
                        timestamp = time.perf_counter()
                        data = json.loads(chunk)
                        if choices := data.get("choices"):
                            content = choices[0]["delta"].get("content")
                            if ttft == 0.0:  # first token
                                ttft = timestamp - st
                                output.ttft = ttft
                            else:  # decoding phase
                                output.itl.append(timestamp - most_recent_timestamp)
                            generated_text += content or ""
                        elif usage := data.get("usage"):
                            output.output_tokens = usage.get("completion_tokens")
                        most_recent_timestamp = timestamp
                output.generated_text = generated_text
                output.success = True
                output.latency = most_recent_timestamp - st
            else:
                output.error = response.reason or ""
    except Exception as e:  # recorded, as vLLM's client does
        output.error = repr(e)
    return output


async def bench(a):
    payload = {"messages": [{"role": "user", "content": prompt(a.isl)}],
               "max_tokens": a.osl, "model": a.model, "stream": True,
               "stream_options": {"include_usage": True}}
    headers = {"Content-Type": "application/json", "Authorization": "Bearer none"}
    semaphore = asyncio.Semaphore(a.concurrency)
    shared = None
    if not a.session_per_request:
        connector = aiohttp.TCPConnector(limit=a.concurrency, limit_per_host=a.concurrency,
                                         keepalive_timeout=60, force_close=False)
        shared = aiohttp.ClientSession(connector=connector, timeout=AIOHTTP_TIMEOUT)

    async def limited():
        async with semaphore:
            if shared is not None:
                return await request_chat(shared, a.url, payload, headers)
            async with aiohttp.ClientSession(timeout=AIOHTTP_TIMEOUT) as session:
                return await request_chat(session, a.url, payload, headers)

    c0, t0 = time.process_time(), time.perf_counter()
    tasks = [asyncio.create_task(limited()) for _ in range(a.requests)]
    outputs = await asyncio.gather(*tasks)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if shared is not None:
        await shared.close()
    ok = [o for o in outputs if o.success]
    itl = [x for o in ok for x in o.itl]
    errors = sorted({o.error for o in outputs if not o.success})
    return {"requests": len(ok), "failed": len(outputs) - len(ok),
            "output_tokens": sum(o.output_tokens or 0 for o in ok),
            "chunks": sum(len(o.itl) + (1 if o.ttft else 0) for o in ok),
            "wall_s": wall, "cpu_s": cpu,
            "ttft_mean_ms": 1e3 * sum(o.ttft for o in ok) / len(ok) if ok else None,
            "itl_mean_ms": 1e3 * sum(itl) / len(itl) if itl else None,
            "errors": errors[:5]}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", required=True, help="the chat completions URL")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--isl", type=int, default=128, help="prompt words")
    ap.add_argument("--osl", type=int, default=64, help="max_tokens")
    ap.add_argument("--model", default="mock-model")
    ap.add_argument("--session-per-request", action="store_true")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(bench(a))))


if __name__ == "__main__":
    main()
