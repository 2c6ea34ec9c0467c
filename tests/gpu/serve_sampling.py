"""keel serve --device cuda with sampling on the device against the same server sampling on the host
(KEEL_CUDA_SAMPLING=0: the logits are copied back and sample::sample_token runs, the reference).

Seeded requests covering greedy, temperature, top-k, top-p, min-p, the three penalties, logit_bias,
n > 1 (samples sharing one logits row), log-probabilities and a JSON-schema grammar must return the same
tokens from both servers. A third server run (device sampling, KEEL_CUDA_GRAPHS=0) checks the greedy
and seeded tokens do not depend on graph replay either, and a fourth (device sampling, --no-overlap)
that overlap scheduling (on by default with device sampling; the host-sampling server never overlaps)
changes no token and no log-probability.

usage: serve_sampling.py KEEL_BINARY MODEL_DIR OUT_DIR
Exit 0 when every request matched; prints one line per request.
"""
import os
import sys

from serve_util import cuda_server, post_completion

PORT = 18441
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}

REQUESTS = [
    ("greedy", {"prompt": "The capital of France is", "max_tokens": 24, "temperature": 0}),
    ("T0.8 top_p0.9", {"prompt": "Once upon a time", "max_tokens": 32, "temperature": 0.8, "top_p": 0.9, "seed": 11}),
    ("T1.2 top_k40 min_p", {"prompt": "List of fruits:", "max_tokens": 32, "temperature": 1.2, "top_k": 40,
                            "min_p": 0.05, "seed": 3}),
    ("penalties", {"prompt": "one two one two one two", "max_tokens": 32, "temperature": 0.9, "seed": 5,
                   "frequency_penalty": 0.6, "presence_penalty": 0.4, "repetition_penalty": 1.3}),
    ("greedy+penalties+bias", {"prompt": "Hello hello hello", "max_tokens": 24, "temperature": 0,
                               "repetition_penalty": 1.5, "logit_bias": {"28": 4.0, "11": -100}}),
    ("n=3 logprobs", {"prompt": "My favourite colour is", "max_tokens": 16, "temperature": 1.0, "seed": 9, "n": 3,
                      "logprobs": 3}),
    ("json schema", {"prompt": "A person as JSON:", "max_tokens": 48, "temperature": 0.7, "seed": 21,
                     "response_format": {"type": "json_schema",
                                         "json_schema": {"name": "p", "schema": SCHEMA, "strict": True}}}),
]


def run_server(keel, model, env_extra, args, log):
    with cuda_server(keel, model, PORT, args, log, env_extra):
        out = {}
        for name, body in REQUESTS:
            r = post_completion(PORT, dict(body, model=os.path.basename(model)))
            out[name] = [(c["index"], c["text"], c.get("logprobs")) for c in r["choices"]]
        return out


def main():
    keel, model, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    runs = {}
    for tag, env, args in [("host", {"KEEL_CUDA_SAMPLING": "0"}, []), ("device", {}, []),
                           ("device-eager", {"KEEL_CUDA_GRAPHS": "0"}, []), ("device-no-overlap", {}, ["--no-overlap"])]:
        with open(os.path.join(out_dir, f"serve_sampling_{tag}.log"), "w") as log:
            runs[tag] = run_server(keel, model, env, args, log)
    with open(os.path.join(out_dir, "serve_sampling_device.log")) as f:
        overlap_on = "overlap scheduling on" in f.read()
    with open(os.path.join(out_dir, "serve_sampling_device-no-overlap.log")) as f:
        overlap_off = "overlap scheduling off" in f.read()
    print(f"{'pass' if overlap_on and overlap_off else 'FAIL'} overlap switch: default server logs overlap on "
          f"({overlap_on}), --no-overlap logs it off ({overlap_off})")
    ok = overlap_on and overlap_off
    for name, _ in REQUESTS:
        host, dev, eager = runs["host"][name], runs["device"][name], runs["device-eager"][name]
        same = [h[1] == d[1] for h, d in zip(host, dev)]
        lp_ok = all(abs(a["token_logprobs"][i] - b["token_logprobs"][i]) < 1e-4
                    for (_, _, a), (_, _, b) in zip(host, dev) if a and b for i in range(len(a["token_logprobs"])))
        graph_ok = [d[1] == e[1] for d, e in zip(dev, eager)]
        plain = runs["device-no-overlap"][name]
        overlap_ok = plain == dev  # index, text and log-probabilities, exactly
        good = all(same) and len(host) == len(dev) and lp_ok and overlap_ok
        ok &= good
        print(f"{'pass' if good else 'FAIL'} {name}: device == host sampler for {sum(same)}/{len(same)} choices, "
              f"logprobs {'equal' if lp_ok else 'DIFFER'}; eager == graph {sum(graph_ok)}/{len(graph_ok)}; "
              f"overlap {'==' if overlap_ok else 'DIFFERS from'} --no-overlap; "
              f"device text {dev[0][1]!r:.80} host {host[0][1]!r:.80}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
