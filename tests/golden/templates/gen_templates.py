#!/usr/bin/env python3
"""Golden outputs for keel's chat-template interpreter (src/tokenizer/template/).

Renders real chat templates with transformers' own chat-template renderer
(transformers.utils.chat_template_utils.render_jinja_template: jinja2's ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks, transformers' tojson, raise_exception and strftime_now) over a matrix of
conversations, and small feature snippets with the same environment. strftime_now reads a fixed clock.

Template sources are not copied: they are named by file (llama.cpp's test data, fetched by
scripts/fetch_test_data.sh) or read from the default model's GGUF metadata (scripts/fetch_model.sh).

  python3 tests/golden/templates/gen_templates.py   # writes templates.json and snippets.json here
"""
import datetime as real_datetime
import json
import os
import sys

import gguf
import transformers.utils.chat_template_utils as ctu

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("KEEL_CACHE_DIR", os.path.expanduser("~/.cache/keel"))
TEMPLATES_DIR = os.path.join(CACHE, "testdata/llamacpp/templates")
MODEL = os.path.join(CACHE, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
NOW = real_datetime.datetime(2025, 3, 14, 15, 9, 26)


class FixedDatetime(real_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return NOW


ctu.datetime = FixedDatetime  # strftime_now() inside transformers' environment reads this clock

TEMPLATES = [
    # name, source, special tokens
    ("SmolLM2-135M-Instruct", {"gguf": "SmolLM2-135M-Instruct.Q4_1.gguf", "key": "tokenizer.chat_template"},
     {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}),
    ("Llama-3.1", {"file": "meta-llama-Llama-3.1-8B-Instruct.jinja"},
     {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
    ("Llama-3.2", {"file": "meta-llama-Llama-3.2-3B-Instruct.jinja"},
     {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
    ("Llama-3.3", {"file": "meta-llama-Llama-3.3-70B-Instruct.jinja"},
     {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
    ("Qwen2.5", {"file": "Qwen-Qwen2.5-7B-Instruct.jinja"}, {"bos_token": None, "eos_token": "<|im_end|>"}),
    ("Qwen3", {"file": "Qwen-Qwen3-0.6B.jinja"}, {"bos_token": None, "eos_token": "<|im_end|>"}),
    ("Mistral-Nemo", {"file": "mistralai-Mistral-Nemo-Instruct-2407.jinja"}, {"bos_token": "<s>", "eos_token": "</s>"}),
    ("Mistral-Small-3.2", {"file": "Mistral-Small-3.2-24B-Instruct-2506.jinja"},
     {"bos_token": "<s>", "eos_token": "</s>"}),
    ("DeepSeek-V3.1", {"file": "deepseek-ai-DeepSeek-V3.1.jinja"},
     {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}),
]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
        "return": {"type": "number"},
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web; returns the top results.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                "filters": {"type": "array", "items": {"type": "string"}},
                "threshold": {"type": "number", "default": 0.5},
            },
            "required": ["query"],
        },
    },
}
TOOL_CALL = {"id": "abcDEF123", "type": "function",
             "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}}
TOOL_CALL_2 = {"id": "xyzUVW789", "type": "function",
               "function": {"name": "search", "arguments": {"query": "météo à Paris", "max_results": 2}}}
TOOL_CALL_STR = {"id": "strARG456", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"location\": \"Tokyo\"}"}}

SYSTEM = {"role": "system", "content": "You are a concise assistant."}
U1 = {"role": "user", "content": "Hello!"}
A1 = {"role": "assistant", "content": "Hi! How can I help you today?"}
U2 = {"role": "user", "content": "  What is 2 + 2?\n"}

CONVERSATIONS = [
    ("single_user", [U1], {}),
    ("system_user", [SYSTEM, U1], {}),
    ("multi_turn", [SYSTEM, U1, A1, U2], {}),
    ("multi_turn_no_system", [U1, A1, U2, {"role": "assistant", "content": "4"}], {}),
    ("non_ascii", [{"role": "system", "content": "Réponds en français — s'il te plaît."},
                   {"role": "user", "content": "Grüße, 世界! 👋 \"quoted\" and \\ backslash\n\ttab"},
                   {"role": "assistant", "content": "Привет! ça va? 🙂"},
                   {"role": "user", "content": "日本語で答えて。"}], {}),
    ("tools_user", [U1], {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
    ("tools_system_user", [SYSTEM, {"role": "user", "content": "What's the weather in Paris?"}],
     {"tools": [WEATHER_TOOL]}),
    ("tool_call_roundtrip", [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_weather",
         "content": "{\"temperature\": 22, \"unit\": \"celsius\"}"},
        {"role": "assistant", "content": "It is 22 °C in Paris."},
    ], {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
    ("parallel_tool_calls", [
        {"role": "user", "content": "Weather in Paris and news about it?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [TOOL_CALL, TOOL_CALL_2]},
        {"role": "tool", "tool_call_id": "abcDEF123", "content": "sunny"},
        {"role": "tool", "tool_call_id": "xyzUVW789", "content": "no news"},
    ], {"tools": [WEATHER_TOOL, SEARCH_TOOL]}),
    ("tool_call_string_args", [
        {"role": "user", "content": "Weather in Tokyo?"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL_STR]},
        {"role": "tool", "tool_call_id": "strARG456", "content": "rainy"},
    ], {"tools": [WEATHER_TOOL]}),
    ("tool_content_mapping", [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "abcDEF123", "content": {"temperature": 22.5, "ok": True, "note": None}},
    ], {"tools": [WEATHER_TOOL]}),
    ("thinking_history", [
        {"role": "user", "content": "Think about 3*7."},
        {"role": "assistant", "content": "<think>\n3*7 is 21.\n</think>\n\n21"},
        {"role": "user", "content": "And 4*5?"},
        {"role": "assistant", "content": "20", "reasoning_content": "4*5 = 20"},
    ], {}),
    ("thinking_disabled", [U1], {"enable_thinking": False}),
    ("thinking_enabled", [U1, A1, U2], {"thinking": True}),
    ("llama_builtin_tools", [SYSTEM, U1], {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"],
                                           "date_string": "01 Jan 2025"}),
    ("llama_tools_in_system", [U1], {"tools": [WEATHER_TOOL], "tools_in_user_message": False}),
    ("content_blocks", [{"role": "user", "content": [{"type": "text", "text": "Describe this:"},
                                                     {"type": "image"}]}], {}),
    ("non_alternating", [U1, {"role": "user", "content": "Anyone there?"}], {}),
    ("empty_messages", [], {}),
    ("tools_without_user", [SYSTEM], {"tools": [WEATHER_TOOL]}),
    ("numbers_and_bools", [{"role": "user", "content": "1.5e-7 <b>&amp;</b>"},
                           {"role": "assistant", "content": "ok", "tool_calls": [
                               {"id": "numARG000", "type": "function",
                                "function": {"name": "calc", "arguments": {"x": 1e-07, "y": 1e16, "z": -0.0,
                                                                           "n": 12345678901234, "b": False,
                                                                           "l": [1, 2.0, "three", None]}}}]}],
     {"tools": [SEARCH_TOOL]}),
]


def template_source(spec):
    if "file" in spec:
        with open(os.path.join(TEMPLATES_DIR, spec["file"]), encoding="utf-8") as f:
            return f.read()
    reader = gguf.GGUFReader(os.path.join(CACHE, "models", spec["gguf"]))
    field = reader.fields[spec["key"]]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def render(source, messages, add_generation_prompt, tools, kwargs):
    """Returns (context the template sees, expected) with expected {"output": ...} or {"error": ...}."""
    chat = ctu._alias_reasoning_fields(ctu._plain_template_data(messages))
    context = {"messages": chat, "tools": tools, "documents": None, "add_generation_prompt": add_generation_prompt}
    context.update(kwargs)
    try:
        rendered, _ = ctu.render_jinja_template(conversations=[messages], tools=tools, chat_template=source,
                                                add_generation_prompt=add_generation_prompt, **kwargs)
        return context, {"output": rendered[0]}
    except Exception as e:  # the C++ renderer must fail too; raise_exception messages must match
        message = str(e)
        return context, {"error": message, "error_type": type(e).__name__,
                         "raise_exception": type(e).__name__ == "TemplateError"}


def gen_templates():
    out = {"generator": "tests/golden/templates/gen_templates.py", "now": NOW.isoformat(), "templates": []}
    for name, spec, special in TEMPLATES:
        source = template_source(spec)
        cases = []
        for conv_name, messages, extra in CONVERSATIONS:
            tools = extra.get("tools")
            kwargs = {k: v for k, v in extra.items() if k != "tools"}
            kwargs.update({k: v for k, v in special.items() if v is not None})
            for agp in (False, True):
                context, expected = render(source, messages, agp, tools, kwargs)
                cases.append({"name": f"{conv_name}/agp={int(agp)}", "context": context, **expected})
        out["templates"].append({"name": name, "source": spec, "cases": cases})
    return out


# Small templates exercising one feature each, rendered by the same environment.
SNIPPETS = [
    # whitespace control, trim_blocks, lstrip_blocks
    ("ws_plain", "a\n{% if true %}\nb\n{% endif %}\nc\n", {}),
    ("ws_lstrip", "x\n    {% if true %}\n    y\n    {% endif %}\nz", {}),
    ("ws_minus", "a   {{- 'b' -}}   c\n\n{%- if true -%}  d  {%- endif -%}\n e", {}),
    ("ws_plus", "a\n  {%+ if true %}b{% endif +%}\nc", {}),
    ("ws_comment", "a\n  {# note #}\nb {#- trim -#}  c", {}),
    ("ws_var_no_lstrip", "a\n    {{ 'v' }}\n", {}),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", {}),
    ("ws_raw", "{% raw %}{{ not evaluated }}{% endraw %}!", {}),
    ("ws_unicode_space", "x\u3000{{- 'y' -}}\u3000z", {}),
    ("ws_inline_block", "a {% if true %} b {% endif %} c", {}),
    # literals and operators
    ("lit_numbers", "{{ 1 }} {{ 1.0 }} {{ 1e20 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 1_000 }} {{ 3.14159 }}", {}),
    ("lit_containers", "{{ [1, 'a', none, true] }} {{ {'k': 'v', 'n': [1]} }} {{ (1,) }} {{ () }} {{ (1, 2) }}", {}),
    ("lit_strings", "{{ 'it\\'s' }}|{{ \"a\\\"b\" }}|{{ 'x' \"y\" }}|{{ ['a\\'b', \"c\\\"d\", 'é\\n\\t'] }}", {}),
    ("op_arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 10 / 4 }} {{ 2 ** 10 }} {{ 2 ** -1 }} "
                 "{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ true + 1 }}", {}),
    ("op_concat", "{{ 'a' ~ 1 ~ none ~ true ~ x }}|{{ 'ab' * 3 }}|{{ 2 * 'cd' }}|{{ [1] * 2 }}|{{ [1] + [2] }}", {}),
    ("op_compare", "{{ 1 == 1.0 }} {{ true == 1 }} {{ [1] == (1,) }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} "
                   "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}", {}),
    ("op_in", "{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in ['a'] }} {{ 'x' in u }}", {}),
    ("op_logic", "{{ 0 or 'd' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ not [] }} {{ none or [] }}", {}),
    ("op_ternary", "{{ 'y' if true else 'n' }} {{ 'y' if false }}|{{ 'a' if 0 else 'b' if 1 else 'c' }}", {}),
    ("op_precedence", "{{ 1 + 2 * 3 }} {{ -2 ** 2 }} {{ 'a' ~ 'b' | upper }} {{ [1, 2, 3] | length - 1 }} "
                      "{{ not 1 == 2 }}", {}),
    # access and slicing
    ("access", "{{ d.a }} {{ d['a'] }} {{ d.missing }}|{{ l[0] }} {{ l[-1] }} {{ l[9] }}|{{ l.1 }} {{ s[1] }}",
     {"d": {"a": 1}, "l": [10, 20, 30], "s": "héllo"}),
    ("slicing", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ s[::-1] }} {{ s[1:3] }} "
                "{{ l[5:] }} {{ l[3:1:-1] }}", {"l": [1, 2, 3, 4, 5], "s": "héllo 世界"}),
    ("dict_items_attr", "{{ d.items is callable }}|{{ d['items'] }}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
     {"d": {"items": 1, "b": 2}}),
    # undefined behaviour
    ("undef_print", "[{{ x }}][{{ x | length }}][{{ x is defined }}][{{ x | default('dflt') }}][{{ x ~ 'a' }}]", {}),
    ("undef_attr_error", "{{ x.y }}", {}),
    ("undef_add_error", "{{ 'a' + x }}", {}),
    ("undef_missing_key_add", "{{ d.missing + 'a' }}", {"d": {}}),
    ("undef_iter", "{% for a in x %}{{ a }}{% else %}empty{% endfor %}", {}),
    ("undef_compare", "{{ x == none }} {{ x is none }} {{ x is undefined }} {{ not x }}", {}),
    # for loops
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                      "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};"
                      "{% endfor %}", {}),
    ("for_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ ',' if not loop.last }}{% endfor %}", {}),
    ("for_unpack", "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}{% for k, v in d | items %}{{ k }}{{ v }}"
                   "{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("for_scoping", "{% set x = 'o' %}{% for i in [1, 2] %}[{{ x }}]{% set x = i %}[{{ x }}]{% endfor %}{{ x }}", {}),
    ("for_scoping_if", "{% for i in [1, 2] %}{% if i == 1 %}{% set y = 'a' %}{% endif %}[{{ y }}]{% endfor %}", {}),
    ("for_break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}"
                           "{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("for_nested_loop", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }}|"
                        "{% endfor %}", {}),
    ("for_dict", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_cycle", "{% for i in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}", {}),
    # set and namespace
    ("set_namespace", "{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
                      "{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }} {{ ns }}", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", {}),
    ("set_block", "{% set x %}  inner {{ 1 + 1 }}  {% endset %}[{{ x }}]{% set y | upper %}abc{% endset %}{{ y }}", {}),
    ("set_ns_error", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("set_ns_underscore", "{% set ns = namespace() %}{% set ns._x = 1 %}", {}),
    # macros and call blocks
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} "
              "{{ greet('Bob', '?') }} {{ greet(punct='.', name='Cy') }}", {}),
    ("macro_scope", "{% set g = 'G' %}{% macro m(x) %}{{ g }}{{ x }}{% set g = 'local' %}{{ g }}{% endmacro %}"
                    "{{ m(1) }}{{ g }}", {}),
    ("macro_caller", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                     "{% for i in [1, 2] %}{% call wrap('b') %}item {{ i }}{% endcall %}{% endfor %}", {}),
    ("macro_recursive", "{% macro fact(n) %}{{ 1 if n <= 1 else n * fact(n - 1) | int }}{% endmacro %}{{ fact(5) }}",
     {}),
    # filters
    ("f_trim_case", "[{{ '  a b \n' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ 'hello world' | capitalize }}]"
                    "[{{ 'hello wORLD' | title }}][{{ 'ÀÉÎ straße' | lower }}][{{ 'àéî straße' | upper }}]", {}),
    ("f_length", "{{ 'héllo' | length }} {{ [1, 2] | length }} {{ {'a': 1} | count }} {{ '' | length }}", {}),
    ("f_default", "{{ x | default('a') }} {{ '' | default('b') }} {{ '' | default('c', true) }} {{ none | d('e') }} "
                  "{{ 0 | default(5, boolean=true) }}", {}),
    ("f_join", "{{ ['a', 'b'] | join }} {{ [1, 2, 3] | join(', ') }} {{ users | join('/', attribute='name') }}",
     {"users": [{"name": "x"}, {"name": "y"}]}),
    ("f_first_last", "{{ [3, 4] | first }} {{ [3, 4] | last }} {{ 'abc' | first }} {{ 'abc' | last }} "
                     "[{{ [] | first }}]", {}),
    ("f_list_items", "{{ 'ab' | list }} {{ d | items | list }} {{ d | list }} {{ (1, 2) | list }}",
     {"d": {"k": 1, "j": 2}}),
    ("f_select", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|"
                 "{{ msgs | rejectattr('role', 'eq', 'user') | list | length }}|{{ [0, 1, 2, '', 'a'] | select | list }}|"
                 "{{ [1, 2, 3, 4] | reject('even') | list }}|{{ msgs | selectattr('extra') | list }}|"
                 "{{ ['A', 'b'] | map('lower') | list }}",
     {"msgs": [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1", "extra": 1},
               {"role": "user", "content": "u2"}]}),
    ("f_replace", "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }}",
     {}),
    ("f_string_int_float", "{{ 12 | string }} {{ [1] | string }} {{ '42' | int + 1 }} {{ '4.7' | int }} {{ 'x' | int }} "
                           "{{ 3.9 | int }} {{ '2.5' | float }} {{ 'x' | float }} {{ 2 | float }} {{ true | int }}", {}),
    ("f_dictsort", "{{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ d | dictsort(by='value') }}",
     {"d": {"b": 2, "a": 3, "C": 1}}),
    ("f_sort_unique", "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }}"
                      " {{ [3, 1, 2] | sort(reverse=true) }} {{ [1, 2, 1, 3] | unique | list }} "
                      "{{ ['a', 'A', 'b'] | unique | list }} {{ users | sort(attribute='age') | map(attribute='n') | list }}",
     {"users": [{"n": "x", "age": 30}, {"n": "y", "age": 20}]}),
    ("f_reverse_sum_minmax", "{{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }} {{ [1, 2, 3.5] | sum }} "
                             "{{ [3, 1, 2] | min }} {{ ['b', 'C', 'a'] | max }} {{ [-3, 2] | map('abs') | list }}", {}),
    ("f_round", "{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 2.1 | round(0, 'ceil') }} "
                "{{ 2.9 | round(method='floor') }} {{ 7 | round }}", {}),
    ("f_indent", "{{ 'a\nb\n\nc' | indent }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent('> ', blank=true) }}",
     {}),
    ("f_escape_safe", "{{ '<a href=\"x\">&\\'</a>' | e }} {{ '<b>' | safe }} {{ 'hello big world' | wordcount }}", {}),
    ("f_tojson", "{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ v | tojson(sort_keys=true) }}|"
                 "{{ v | tojson(separators=(',', ':')) }}|{{ v | tojson(ensure_ascii=true) }}|{{ 'x' | tojson }}",
     {"v": {"z": [1, 2.5, None, True, {}], "a": "é\"\n\u0001/ 😀", "e": [], "f": 1e-07, "g": 1e16, "h": -0.0}}),
    ("f_tojson_indent_str", "{{ v | tojson(indent='\t') }}|{{ v | tojson(indent=0) }}", {"v": {"a": [1, {"b": 2}]}}),
    ("f_tojson_tuple", "{{ (1, 'a') | tojson }} {{ d.items() | list | tojson }}", {"d": {"k": "v"}}),
    ("f_filter_block", "{% filter upper %}abc {{ 'd' }}{% endfilter %}", {}),
    ("f_safe_markup", "{{ \"a'\" | safe + '<b>' }}|{{ 'x' + ('&' | safe) }}|{{ ('<' | safe) * 2 + '>' }}|"
                      "{{ ['<' | safe, '<'] }}|{{ '<' | e }}|{{ '<' | e | e }}|{{ ('<' | safe) ~ '<' }}|"
                      "{{ 'Use ' | safe + t.name + '\n' | safe + t | tojson }}|{{ ' <a> ' | safe | trim + '&' }}",
     {"t": {"name": "x&y", "d": "\"q\""}}),
    # tests
    ("tests", "{{ 'x' is string }} {{ none is none }} {{ [] is iterable }} {{ {} is mapping }} {{ 'a' is iterable }} "
              "{{ 1 is number }} {{ true is number }} {{ true is integer }} {{ 1.0 is float }} {{ true is boolean }} "
              "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'ab' is lower }} {{ 'AB' is upper }} "
              "{{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 1 is ge 2 }} {{ x is undefined }} {{ x is iterable }} "
              "{{ range is callable }} {{ 'a' is in 'abc' }} {{ false is false }} {{ 0 is false }} {{ none is sameas none }} "
              "{{ {} is sequence }} {{ 1 is not string }}", {}),
    # string methods
    ("m_strip_split", "[{{ '  a  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\n a'.lstrip() }}][{{ 'a \n'.rstrip() }}]"
                      "[{{ 'a,b,,c'.split(',') }}][{{ ' a  b '.split() }}][{{ 'a,b,c'.split(',', 1) }}]"
                      "[{{ 'a,b,c'.rsplit(',', 1) }}][{{ 'x</think>y</think>z'.split('</think>')[-1] }}]", {}),
    ("m_affix", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} "
                "{{ 'hello'.endswith('x') }}", {}),
    ("m_misc", "{{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', '+', 1) }} {{ 'héllo'.find('l') }} "
               "{{ 'hello'.rfind('l') }} {{ 'hello'.count('l') }} {{ ', '.join(['a', 'b']) }} {{ 'ab'.upper() }} "
               "{{ 'Ab'.lower() }} {{ 'a b'.title() }} {{ 'ab'.capitalize() }} {{ 'a\nb'.splitlines() }} "
               "{{ '12'.isdigit() }} {{ ' '.isspace() }}", {}),
    ("m_dict", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} "
               "{{ d.items() | list }}", {"d": {"a": 1, "b": [2]}}),
    ("m_list_mutation_error", "{% set l = [1] %}{{ l.append(2) }}", {}),
    ("m_dict_pop_error", "{{ d.pop('a') }}", {"d": {"a": 1}}),
    # globals
    ("g_range", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}",
     {}),
    ("g_dict_namespace", "{{ dict(a=1, b='x') }} {% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}", {}),
    ("g_raise", "{% if true %}{{ raise_exception('Bad role: ' ~ role) }}{% endif %}", {"role": "robot"}),
    ("g_strftime", "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%H:%M:%S %A %B %j') }}",
     {}),
    # errors
    ("err_type_add", "{{ 'a' + 1 }}", {}),
    ("err_div_zero", "{{ 1 / 0 }}", {}),
    ("err_not_callable", "{{ 'a'() }}", {}),
    ("err_unknown_filter", "{{ 'a' | nosuchfilter }}", {}),
    ("err_unknown_test", "{{ 'a' is nosuchtest }}", {}),
    ("err_unclosed_if", "{% if true %}a", {}),
    ("err_unclosed_var", "{{ 'a' ", {}),
    ("err_bad_syntax", "{{ 1 + }}", {}),
    ("err_endfor_without_for", "{% endfor %}", {}),
    ("err_include", "{% include 'x.html' %}", {}),
    ("err_unpack", "{% for a, b in [1] %}{% endfor %}", {}),
    ("err_iterate_int", "{% for a in 5 %}{% endfor %}", {}),
    ("err_compare_types", "{{ 1 < 'a' }}", {}),
]


def gen_snippets():
    out = {"generator": "tests/golden/templates/gen_templates.py", "now": NOW.isoformat(), "snippets": []}
    for name, source, context in SNIPPETS:
        entry = {"name": name, "source": source, "context": context}
        try:
            compiled = ctu._compile_jinja_template(source)
            entry["output"] = compiled.render(**context)
        except Exception as e:
            entry["error"] = str(e)
            entry["error_type"] = type(e).__name__
            entry["raise_exception"] = type(e).__name__ == "TemplateError"
        out["snippets"].append(entry)
    return out


def write(name, data):
    path = os.path.join(HERE, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    write("templates.json", gen_templates())
    write("snippets.json", gen_snippets())
