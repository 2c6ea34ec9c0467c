"""Structured output end to end: a real `keel serve` on SmolLM2, the official openai client, and the
`jsonschema` package as the independent judge. Every constrained output must parse and validate;
invalid or unsupported schemas, regexes and grammars must be 400s (openai.BadRequestError)."""
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import jsonschema
import openai
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("KEEL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "maskbench-dev"

# Real schemas from MaskBench-dev: function-call arguments, nested objects, arrays of objects,
# nullable unions (Kubernetes) and draft-04 documents.
MASKBENCH = [
    "BFCL_simple_0.json",
    "Glaiveai2K---calculate_area_763b5315.json",
    "Glaiveai2K---create_invoice_a5449ea0.json",
    "Kubernetes---kb_56_Normalized.json",
    "Github_easy---o84028.json",
]
MAX_TOKENS = 400


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(keel_bin, model_path, extra):
    port = _free_port()
    proc = subprocess.Popen([keel_bin, "serve", "--model", model_path, "--port", str(port), "--served-model-name",
                             "smollm2", "--kv-tokens", "8192", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "KEEL_THREADS": "2"})
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return base, proc
        except (urllib.error.URLError, ConnectionError):
            pass
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.2)
    proc.kill()
    pytest.fail("keel serve did not become healthy in 120 s")


def _stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def server(keel_bin, model_path):
    base, proc = _start(keel_bin, model_path, [])
    yield base
    _stop(proc)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server + "/v1", api_key="unused", max_retries=0, timeout=600)


def _schema_case(name):
    return json.loads((DATA / name).read_text())["schema"]


def _prompt(schema):
    return [{"role": "system", "content": "You reply with one JSON value and nothing else."},
            {"role": "user", "content": "Give an example JSON instance of this JSON Schema:\n" + json.dumps(schema)}]


def _validate(schema, text):
    value = json.loads(text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls(schema, format_checker=cls.FORMAT_CHECKER).validate(value)
    return value


@pytest.mark.parametrize("name", MASKBENCH)
def test_json_schema_outputs_validate(client, name):
    schema = _schema_case(name)
    r = client.chat.completions.create(
        model="smollm2", messages=_prompt(schema), max_tokens=MAX_TOKENS, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "case", "schema": schema, "strict": False}})
    choice = r.choices[0]
    assert choice.finish_reason in ("stop", "length"), choice.finish_reason
    if choice.finish_reason == "stop":
        _validate(schema, choice.message.content)
    else:
        # A 135M model can loop inside a permissive schema (open additionalProperties, arrays of
        # anything) until max_tokens; the grammar cannot end that for it. What keel guarantees then is
        # that the text so far is the start of valid JSON: the parser fails only at the end of input.
        _assert_json_prefix(choice.message.content)


def _assert_json_prefix(text):
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        assert _prefix_of_valid_json(text), (e, text[max(0, e.pos - 40):e.pos + 40])
    else:
        raise AssertionError("finish_reason 'length' but the text is already complete JSON: " + text[:200])


def _prefix_of_valid_json(text):
    # Completes the text with the closers its open strings, arrays and objects need (plus a value
    # where one is due) and checks that the result parses; a syntax error inside the text cannot be
    # completed this way.
    stack, in_str, esc = [], False, False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and stack:
            stack.pop()
    tail = text + ("\\" if esc else "") + ('"' if in_str else "")
    # Fillers for a cut number, key, value or literal (tru|e, nu|ll, fals|e).
    for filler in ("", "0", ":0", '"":0', "null", "e", "ue", "rue", "l", "ll", "ull", "se", "lse", "alse"):
        try:
            json.loads(tail + filler + "".join(reversed(stack)))
            return True
        except json.JSONDecodeError:
            continue
    return False


def test_properties_come_in_schema_order(client):
    schema = {"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"enum": ["x", "y"]}},
              "required": ["zeta", "alpha"], "additionalProperties": False}
    r = client.chat.completions.create(
        model="smollm2", messages=_prompt(schema), max_tokens=64, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "order", "schema": schema}})
    text = r.choices[0].message.content
    _validate(schema, text)
    assert text.index('"zeta"') < text.index('"alpha"'), text


def test_json_object_on_completions_and_chat(client):
    comp = client.completions.create(model="smollm2", prompt="Convert to JSON: name Tom, age 3.\nJSON:",
                                     max_tokens=MAX_TOKENS, temperature=0,
                                     extra_body={"response_format": {"type": "json_object"}})
    chat = client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Describe a cat as a JSON object with keys name and age."}],
        max_tokens=MAX_TOKENS, temperature=0, response_format={"type": "json_object"})
    for text, finish in [(comp.choices[0].text, comp.choices[0].finish_reason),
                         (chat.choices[0].message.content, chat.choices[0].finish_reason)]:
        assert finish == "stop", text
        assert isinstance(json.loads(text), dict), text


def test_regex_on_chat_and_completions(client):
    pattern = r"(\+1 )?\(?[0-9]{3}\)?[ -][0-9]{3}-[0-9]{4}"
    chat = client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Give me a US phone number."}], max_tokens=40,
        temperature=0, extra_body={"regex": pattern})
    comp = client.completions.create(model="smollm2", prompt="Call us at", max_tokens=40, temperature=0,
                                     extra_body={"regex": pattern})
    for text, finish in [(chat.choices[0].message.content, chat.choices[0].finish_reason),
                         (comp.choices[0].text, comp.choices[0].finish_reason)]:
        assert finish == "stop"
        assert re.fullmatch(pattern, text), text


EBNF = r'''
root   ::= "The answer is " answer "."
answer ::= "yes" | "no" | number
number ::= [1-9] [0-9]{0,2}
'''


def test_ebnf_on_chat(client):
    r = client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Is the sky blue?"}], max_tokens=40, temperature=0,
        extra_body={"ebnf": EBNF})
    assert r.choices[0].finish_reason == "stop"
    assert re.fullmatch(r"The answer is (yes|no|[1-9][0-9]{0,2})\.", r.choices[0].message.content)


def test_native_generate_with_regex_and_schema(server):
    def post(body):
        req = urllib.request.Request(server + "/generate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as resp:
            return json.loads(resp.read())

    r = post({"text": "The year was", "sampling_params": {"max_new_tokens": 20, "temperature": 0,
                                                          "regex": " (19|20)[0-9]{2}"}})
    assert re.fullmatch(r" (19|20)[0-9]{2}", r["text"]), r
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    r = post({"text": "JSON:", "sampling_params": {"max_new_tokens": 20, "temperature": 0, "json_schema": schema}})
    assert r["meta_info"]["finish_reason"]["type"] == "stop"
    _validate(schema, r["text"])


def test_n_samples_with_seed_each_validate_and_reproduce(client):
    schema = _schema_case("BFCL_simple_0.json")
    kwargs = dict(model="smollm2", messages=_prompt(schema), max_tokens=MAX_TOKENS, temperature=0.8, n=3, seed=11,
                  response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}})
    a = client.chat.completions.create(**kwargs)
    b = client.chat.completions.create(**kwargs)
    assert len(a.choices) == 3
    for ca, cb in zip(a.choices, b.choices):
        assert ca.message.content == cb.message.content, "same seed, same samples"
        if ca.finish_reason == "stop":
            _validate(schema, ca.message.content)
        else:  # truncated by max_tokens: still a prefix the grammar allows, never a wrong token
            assert ca.finish_reason == "length"
    assert sum(c.finish_reason == "stop" for c in a.choices) >= 1


def test_streaming_json_schema(client):
    schema = _schema_case("Kubernetes---kb_56_Normalized.json")
    stream = client.chat.completions.create(
        model="smollm2", messages=_prompt(schema), max_tokens=MAX_TOKENS, temperature=0, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}})
    parts, finish = [], None
    for chunk in stream:
        if chunk.choices:
            parts.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop"
    _validate(schema, "".join(parts))


@pytest.mark.parametrize("extra,needle", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"a": {"$dynamicRef": "#meta"}}}}}}, "#/properties/a"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "strnig"}}}},
     "strnig"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "$ref": "#/$defs/missing"}}}}, "missing"),
    ({"regex": "(unclosed"}, "regex"),
    ({"regex": "(?<=lookbehind)a"}, "regex"),
    ({"ebnf": "root ::= undefined-rule"}, "undefined-rule"),
])
def test_invalid_grammars_are_bad_requests(client, extra, needle):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "x"}], max_tokens=8,
                                       extra_body=extra)
    assert needle in str(e.value), str(e.value)


def test_jump_forward_keeps_greedy_output(keel_bin, model_path, client):
    base, proc = _start(keel_bin, model_path, ["--jump-forward"])
    try:
        jf = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=600)
        cases = [dict(response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": _schema_case(n)}},
                      messages=_prompt(_schema_case(n))) for n in MASKBENCH[:3]]
        cases.append(dict(messages=[{"role": "user", "content": "Phone?"}],
                          extra_body={"regex": r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}"}))
        for kw in cases:
            a = client.chat.completions.create(model="smollm2", max_tokens=MAX_TOKENS, temperature=0, **kw)
            b = jf.chat.completions.create(model="smollm2", max_tokens=MAX_TOKENS, temperature=0, **kw)
            assert a.choices[0].message.content == b.choices[0].message.content
            assert a.choices[0].finish_reason == b.choices[0].finish_reason
            assert a.usage.completion_tokens == b.usage.completion_tokens
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            metrics = r.read().decode()
        m = re.search(r"^keel_jump_forward_tokens (\d+)", metrics, re.M)
        assert m and int(m.group(1)) > 0, "jump-forward never fired"
    finally:
        _stop(proc)


def _whitespace_runs(text):
    """Lengths of the whitespace runs outside JSON strings."""
    runs, cur, in_str, esc = [], 0, False, False
    for ch in text:
        if in_str:
            in_str, esc = (ch != '"' or esc), (ch == "\\" and not esc)
            continue
        if ch in " \t\n\r":
            cur += 1
            continue
        if cur:
            runs.append(cur)
        cur, in_str = 0, ch == '"'
    return runs + ([cur] if cur else [])


def test_grammar_whitespace_per_request_and_server_wide(keel_bin, model_path, client):
    schema = _schema_case(MASKBENCH[0])
    kw = dict(model="smollm2", messages=_prompt(schema), max_tokens=MAX_TOKENS, temperature=0,
              response_format={"type": "json_schema", "json_schema": {"name": "ws", "schema": schema}})
    flexible = client.chat.completions.create(**kw, extra_body={"grammar_whitespace": "flexible"})
    _validate(schema, flexible.choices[0].message.content)
    assert all(n <= 16 for n in _whitespace_runs(flexible.choices[0].message.content))
    compact = client.chat.completions.create(**kw)  # the server default: compact
    _validate(schema, compact.choices[0].message.content)
    assert _whitespace_runs(compact.choices[0].message.content) == []
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(**kw, extra_body={"grammar_whitespace": "loose"})
    assert "grammar_whitespace" in str(e.value)

    base, proc = _start(keel_bin, model_path, ["--grammar-whitespace", "flexible", "--grammar-max-whitespace", "2"])
    try:
        other = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=600)
        spaced = other.chat.completions.create(**kw)
        _validate(schema, spaced.choices[0].message.content)
        assert all(n <= 2 for n in _whitespace_runs(spaced.choices[0].message.content))
        tight = other.chat.completions.create(**kw, extra_body={"grammar_whitespace": "compact"})
        _validate(schema, tight.choices[0].message.content)
        assert _whitespace_runs(tight.choices[0].message.content) == []
    finally:
        _stop(proc)
