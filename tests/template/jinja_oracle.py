#!/usr/bin/env python3
"""Oracle test of jitllm's Jinja interpreter: every chat template of tests/data/templates,
rendered with every conversation of conversations.json, by python3-jinja2 configured as Hugging
Face's apply_chat_template configures it, and by `jitllm template`. The two texts must be the
same bytes; where Jinja2 fails (the template raises, or a filter meets a value it cannot take),
jitllm must fail too, with one `error:` line naming the template line. Each template must render
at least --min-ok conversations. Templates copied from a GGUF file are rendered from that file
(`jitllm template -m FILE` with no --template: the template and the BOS / EOS texts jitllm reads
from it), and once from the stored copy.

Exit status: 0 all agree, 1 a difference, 77 (ctest's skip) without python3-jinja2."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

try:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("SKIP: python3-jinja2 is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)


def hf_environment():
    """The environment transformers renders chat templates in: a sandbox with trim_blocks,
    lstrip_blocks and the loop controls; tojson as json.dumps (no HTML escaping, keys in
    their order); raise_exception and strftime_now."""
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_compiled = {}


def oracle_render(env, source, conv, bos, eos):
    """(text, None) or (None, the error)."""
    try:
        if source not in _compiled:
            _compiled[source] = env.from_string(source)
        template = _compiled[source]
    except jinja2.TemplateSyntaxError as e:
        return None, f"TemplateSyntaxError: {e}"
    variables = {
        "messages": conv["messages"],
        "tools": conv.get("tools"),
        "documents": None,
        "add_generation_prompt": conv.get("add_generation_prompt", True),
    }
    if bos is not None:
        variables["bos_token"] = bos
    if eos is not None:
        variables["eos_token"] = eos
    variables.update(conv.get("vars", {}))
    try:
        return template.render(**variables), None
    except Exception as e:  # what the template raised, or Python's TypeError & co.
        return None, f"{type(e).__name__}: {e}"


def jitllm_render(binary, args):
    """(stdout bytes, None) on success, else (None, stderr text)."""
    p = subprocess.run([binary, "template"] + args, capture_output=True, timeout=60)
    if p.returncode == 0:
        return p.stdout, None
    return None, p.stderr.decode("utf-8", "replace").strip() or f"exit status {p.returncode}"


def first_difference(a, b):
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    return (f"first difference at byte {n}:\n  jinja2: {a[max(0, n - 60):n + 60]!r}\n"
            f"  jitllm: {b[max(0, n - 60):n + 60]!r}")


def conversation_files(tmp, conv, index):
    """The --messages / --tools / --var arguments of one conversation."""
    args = []
    path = os.path.join(tmp, f"messages{index}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(conv["messages"], f, ensure_ascii=False)
    args += ["--messages", path]
    if conv.get("tools") is not None:
        path = os.path.join(tmp, f"tools{index}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(conv["tools"], f, ensure_ascii=False)
        args += ["--tools", path]
    if not conv.get("add_generation_prompt", True):
        args.append("--no-generation-prompt")
    for k, v in conv.get("vars", {}).items():
        args += ["--var", f"{k}={json.dumps(v, ensure_ascii=False)}"]
    return args


def check(env, binary, source, conv, bos, eos, args, label):
    """One comparison; returns (agreed, rendered)."""
    want, want_err = oracle_render(env, source, conv, bos, eos)
    got, got_err = jitllm_render(binary, args)
    if want is not None and got is not None:
        if want.encode("utf-8") == got:
            return True, True
        print(f"FAIL {label}: the texts differ\n{first_difference(want, got.decode('utf-8', 'replace'))}")
        return False, False
    if want is None and got is None:
        if got_err.startswith("error: ") and " line " in got_err and "\n" not in got_err:
            return True, False
        print(f"FAIL {label}: both fail, but jitllm's message is not one line naming the template line: {got_err!r}")
        return False, False
    if want is None:
        print(f"FAIL {label}: jinja2 fails ({want_err}) but jitllm renders {got[:120]!r}")
    else:
        print(f"FAIL {label}: jinja2 renders {want[:120]!r} but jitllm fails: {got_err}")
    return False, False


def check_features(env, binary, path):
    """The feature cases: each template with the file's variables; the error cases must fail
    on both sides. Returns the number of failures."""
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    conv = {"messages": [], "vars": spec["vars"]}
    failures = rendered = 0
    with tempfile.TemporaryDirectory() as tmp:
        args = conversation_files(tmp, conv, 0)
        cases = [(c, True) for c in spec["cases"]] + [(c, False) for c in spec["error_cases"]]
        for i, (source, should_render) in enumerate(cases):
            path = os.path.join(tmp, f"case{i}.jinja")
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(source)
            agreed, ok = check(env, binary, source, conv, None, None, ["--template", path] + args,
                               f"feature case {source!r}")
            if agreed and ok != should_render:
                print(f"FAIL feature case {source!r}: expected to {'render' if should_render else 'fail'}")
                agreed = False
            failures += not agreed
            rendered += ok
    print(f"{len(cases)} feature cases: {rendered} rendered identically, {len(cases) - rendered} failed on both "
          f"sides, {failures} failures")
    return failures


def data_file(tmp, data, rel):
    """data/rel, or data/rel.zst decompressed into tmp (the repository stores its GGUF files so)."""
    path = os.path.join(data, rel)
    if os.path.exists(path) or not os.path.exists(path + ".zst"):
        return path
    out = os.path.join(tmp, os.path.basename(rel))
    if not os.path.exists(out):
        with open(out, "wb") as f:
            subprocess.run(["zstd", "-dcq", path + ".zst"], stdout=f, check=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jitllm", required=True, help="the jitllm binary")
    ap.add_argument("--templates", required=True, help="tests/data/templates")
    ap.add_argument("--data", required=True,
                    help="the test data folder (GGUF files of the manifest); $JITLLM_SHARED_DIR overrides it")
    ap.add_argument("--min-ok", type=int, default=10, help="conversations each template must render")
    a = ap.parse_args()
    a.data = os.environ.get("JITLLM_SHARED_DIR") or a.data
    os.environ["TZ"] = "UTC"  # strftime_now: the same date on both sides
    env = hf_environment()
    with open(os.path.join(a.templates, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)["templates"]
    with open(os.path.join(a.templates, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)["conversations"]
    failures, total_ok, rows = 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        conv_args = [conversation_files(tmp, c, i) for i, c in enumerate(conversations)]
        for t in manifest:
            path = os.path.join(a.templates, t["file"])
            with open(path, encoding="utf-8", newline="") as f:
                source = f.read()
            bos, eos = t.get("bos_token"), t.get("eos_token")
            specials = [] if "gguf" in t else ["--var", f"bos_token={json.dumps(bos)}",
                                               "--var", f"eos_token={json.dumps(eos)}"]
            model = ["-m", data_file(tmp, a.data, t["gguf"])] if "gguf" in t else []
            ok = 0
            for i, (conv, cargs) in enumerate(zip(conversations, conv_args)):
                label = f"{t['file']} x {conv['name']}"
                # a template of a GGUF file: read from the file (its BOS / EOS too), and once
                # from the stored copy
                args = model + cargs if "gguf" in t else ["--template", path] + specials + cargs
                agreed, rendered = check(env, a.jitllm, source, conv, bos, eos, args, label)
                if agreed and "gguf" in t and i == 0:
                    agreed, _ = check(env, a.jitllm, source, conv, bos, eos,
                                      model + ["--template", path] + cargs, label + " (stored copy)")
                failures += not agreed
                ok += agreed and rendered
            rows.append((t["file"], t["family"], ok))
            total_ok += ok
            if ok < a.min_ok:
                print(f"FAIL {t['file']}: {ok} conversations rendered identically, expected at least {a.min_ok}")
                failures += 1
    failures += check_features(env, a.jitllm, os.path.join(os.path.dirname(__file__), "jinja_features.json"))
    for name, family, ok in rows:
        print(f"{name:44s} {family:18s} {ok:3d}/{len(conversations)} identical")
    print(f"{len(manifest)} templates x {len(conversations)} conversations: {total_ok} renderings byte-identical "
          f"to jinja2 {jinja2.__version__}, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
