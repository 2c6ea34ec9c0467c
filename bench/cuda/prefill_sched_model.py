#!/usr/bin/env python3
"""Step-level model of keel serve's scheduler on the 8B serve bench (1,024 in / 256 out, closed loop), to
ask whether the per-step token budget (--max-batch-tokens) moves the throughput. Not a measurement:
each step runs every decoding sequence (one token each) first, then prefill chunks (at most CHUNK tokens
of a sequence) while the budget lasts; a step costs max(weight stream, GEMM FLOPs at an achieved rate)
+ the decode rows' KV reads + a per-prefill-token cost for the non-GEMM ops. Constants from the H200 runs
in docs/performance.md (Session 6) and ../shared/GPU.md.
usage: prefill_sched_model.py   (prints concurrency, budget, output tok/s, steps)"""

WEIGHT_STREAM_S = 4.2e-3     # GEMMs of a small decode step: the weights once (GPU.md, bs 1-64)
GEMM_FLOP_PER_TOKEN = 2 * 7e9
GEMM_RATE = 650e12           # achieved bf16 GEMM rate at these shapes (below the 854 TFLOP/s square rate)
KV_BYTES_PER_KEY = 131072    # K + V of one token over 32 layers, bf16
HBM = 3.9e12
CONTEXT = 1100               # typical keys of a decode row in this workload
DECODE_FIXED_S = 1.8e-3      # norms, RoPE, sampling of a decode step
PREFILL_TOKEN_S = 7e-6       # non-GEMM per prompt token (attention, elementwise) in a prefill step


def simulate(concurrency, n_requests, budget, chunk=2048, prompt=1024, out=256):
    t, steps, done, issued = 0.0, 0, 0, concurrency
    running = [[prompt, out] for _ in range(concurrency)]  # [prompt tokens left, output tokens left]
    while done < n_requests:
        decoding = [r for r in running if r[0] == 0]
        left = budget - len(decoding)
        prefill = 0
        for r in running:
            if r[0] > 0 and left > 0:
                n = min(r[0], chunk, left)
                r[0] -= n
                left -= n
                prefill += n
        n_tokens = prefill + len(decoding)
        t += max(WEIGHT_STREAM_S, n_tokens * GEMM_FLOP_PER_TOKEN / GEMM_RATE)
        t += len(decoding) * CONTEXT * KV_BYTES_PER_KEY / HBM + (DECODE_FIXED_S if decoding else 0.0)
        t += prefill * PREFILL_TOKEN_S
        steps += 1
        for r in decoding:
            r[1] -= 1
            if r[1] == 0:
                running.remove(r)
                done += 1
                if issued < n_requests:
                    running.append([prompt, out])
                    issued += 1
    return n_requests * out / t, steps


if __name__ == "__main__":
    for concurrency, n in ((64, 192), (256, 512)):
        for budget in (512, 1024, 2048, 4096, 8192, 16384):
            tok_s, steps = simulate(concurrency, n, budget)
            print(f"c{concurrency} budget {budget:6d}: {tok_s:6.0f} output tok/s, {steps} steps")
