#!/usr/bin/env python3
"""Tests of scripts/peers_sdpa.py that need neither torch nor a GPU.

Run: python3 tests/test_peers_sdpa.py [--flashio PATH]   (no pytest; exits 1 if a test fails)

The script takes its points from `flashio run --dry-run --json`, so these tests run the real
flashio binary: --flashio PATH (tests/CMakeLists.txt passes the built one), else $FLASHIO_BIN,
else build/flashio. They check that the peers' names, problems and FLOPs are flashio's for the
default sweep, a preset and a sweep file; that points a back-end cannot run are `skipped`
records with the reason; argument parsing (bad input -> one line on stderr, exit 2, no
file); the input generator and the checked (batch, head) pairs against values produced by
the C++ code (bench/core/inputs.cpp, bench/measure/check.cpp); and that records built by the script
validate against results/schema.json with the small validator below (no jsonschema
package needed). Two tests go further where this Python has the package, and say that they
were skipped where it has not: the float64 reference (GQA/MQA, Nq != Nk) on numpy against
loops and central differences, and the script's GPU-side code (ProblemData, run_check) run on
the CPU with torch (Debian's python3-torch 1.13 is enough: it needs no SDPA). /usr/bin/python3
on Debian with python3-numpy and python3-torch runs both. Key padding on SDPA (an attn_mask): the
reasons and the call's arguments without torch; the mask, the check and the rule for a sequence
of length 0 on a CPU torch, with a documented stand-in for scaled_dot_product_attention.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import traceback
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "peers_sdpa.py")
SCHEMA_PATH = os.path.join(ROOT, "results", "schema.json")


def load_module():
    spec = importlib.util.spec_from_file_location("peers_sdpa", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["peers_sdpa"] = mod  # dataclasses look the module up by name
    spec.loader.exec_module(mod)
    return mod


def _flashio_from_argv() -> str:
    argv = sys.argv[1:]
    for i, a in enumerate(argv):
        if a == "--flashio" and i + 1 < len(argv):
            return os.path.abspath(argv[i + 1])
        if a.startswith("--flashio="):
            return os.path.abspath(a.split("=", 1)[1])
    return os.path.abspath(os.environ.get("FLASHIO_BIN") or os.path.join(ROOT, "build", "flashio"))


FLASHIO = _flashio_from_argv()
os.environ["FLASHIO_BIN"] = FLASHIO  # the script's default, in this process and its children

had_torch = "torch" in sys.modules
ps = load_module()


def flashio_points(*args) -> dict:
    """flashio's own `run --dry-run --json` document for these axes."""
    r = subprocess.run([FLASHIO, "run", "--dry-run", "--json"] + list(args), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, (args, r.returncode, r.stderr)
    return json.loads(r.stdout)


def peer_config(*args):
    return ps.parse_config(list(args) + ["--dry-run"])


def one_point(backend="flash", pass_="fwd", *axes):
    """The single peer point of these axes (its problem and FLOPs from flashio)."""
    pts = peer_config("--backend", backend, "--pass", pass_, *axes).points
    assert len(pts) == 1, [p.name() for p in pts]
    return pts[0]


# --------------------------------------------------------------------------------------
# A tiny JSON-schema validator: the keywords results/schema.json uses.
# --------------------------------------------------------------------------------------


def _type_ok(value, t: str) -> bool:
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if t == "null":
        return value is None
    raise ValueError(f"validator: unknown type {t}")


def validate(value, schema: dict, root: dict, path: str = "$") -> list:
    """Errors of `value` against `schema` (empty list = valid)."""
    errors = []
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        target = root
        for part in ref[2:].split("/"):
            target = target[part]
        errors += validate(value, target, root, path)
    known = {"$ref", "type", "const", "enum", "required", "properties", "additionalProperties", "items",
             "minimum", "maximum", "exclusiveMinimum", "minItems", "maxItems", "description", "title", "$schema",
             "$id", "$defs", "pattern"}
    unknown = set(schema) - known
    if unknown:
        raise ValueError(f"validator: unsupported keywords {unknown} at {path}")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(value, t) for t in types):
            return errors + [f"{path}: {value!r} is not of type {types}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} != const {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {schema['pattern']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= exclusiveMinimum {schema['exclusiveMinimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required '{key}'")
        props = schema.get("properties", {})
        for key, v in value.items():
            if key in props:
                errors += validate(v, props[key], root, f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: additional property '{key}'")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += validate(v, schema["additionalProperties"], root, f"{path}.{key}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            errors += validate(v, schema["items"], root, f"{path}[{i}]")
    return errors


with open(SCHEMA_PATH, encoding="utf-8") as f:
    SCHEMA = json.load(f)


def validate_file(doc: dict) -> list:
    # Round-trip through JSON text first: what is validated is what would be written.
    text = json.dumps(ps._json_safe(doc), allow_nan=False)
    return validate(json.loads(text), SCHEMA, SCHEMA)


def validate_record(rec: dict) -> list:
    return validate(json.loads(json.dumps(ps._json_safe(rec), allow_nan=False)),
                    {"$ref": "#/$defs/record"}, SCHEMA)


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


def P(**kw):
    base = dict(batch=4, heads=16, seqlen=4096, head_dim=64, dtype="fp16", causal=False)
    base.update(kw)
    return ps.Problem(**base)


def test_import_does_not_need_torch():
    assert had_torch or "torch" not in sys.modules, "importing the script imported torch"


def test_flashio_binary_is_there():
    assert os.path.isfile(FLASHIO) and os.access(FLASHIO, os.X_OK), \
        f"no flashio binary at {FLASHIO}: build it, or pass --flashio PATH (or set FLASHIO_BIN)"


def test_point_names_problems_and_flops_are_flashios():
    pt = one_point("flash", "fwd", "-b", "4", "--heads", "16", "-n", "4096", "-d", "64", "--causal", "true")
    assert pt.name() == "sdpa_flash/fwd/b:4/h:16/n:4096/d:64/fp16/causal" and pt.method == "sdpa_flash"
    assert pt.flops == 0.5 * 4.0 * 4 * 16 * 4096 * 4096 * 64 and pt.skip == ""
    doc = flashio_points("-m", "flash2", "-b", "4", "--heads", "16", "-n", "4096", "-d", "64", "--causal", "true")
    assert doc["points"][0]["name"] == "flash2/fwd/b:4/h:16/n:4096/d:64/fp16/causal"
    assert pt.problem_json == doc["points"][0]["problem"] and pt.flops == doc["points"][0]["flops"]
    assert pt.problem == ps.Problem(4, 16, 4096, 64, "fp16", True, 0x5EED)
    pt = one_point("math", "bwd", "-b", "32", "--heads", "32", "-n", "512", "-d", "64", "--dtype", "bf16")
    assert pt.name() == "sdpa_math/bwd/b:32/h:32/n:512/d:64/bf16"
    assert pt.flops == 2.5 * 4.0 * 32 * 32 * 512 * 512 * 64
    pt = one_point("cudnn", "fwdbwd", "-b", "2", "--heads", "3", "-n", "128", "-d", "128")
    assert pt.name() == "sdpa_cudnn/fwdbwd/b:2/h:3/n:128/d:128/fp16" and pt.flops == 3.5 * 4.0 * 2 * 3 * 128 * 128 * 128
    assert [ps.method_name(b) for b in ps.BACKENDS] == ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "sdpa_math"]


def test_problem_json():
    j = one_point("flash", "fwd", "-d", "128", "-n", "4096").problem_json
    assert j["kv_heads"] == 16 and j["seqlen_k"] == 4096 and j["padding"] == "none" and j["dropout"] == 0.0
    assert j["block_r"] == 0 and j["block_c"] == 0 and j["seed"] == 0x5EED
    assert j["softmax_scale"] == 1.0 / math.sqrt(128.0)
    assert not validate(j, {"$ref": "#/$defs/problem"}, SCHEMA)


def _pairs_of(doc: dict) -> list:
    """(problem name, pass, flops, problem) of flashio's points, each pair once, in order."""
    out, seen = [], set()
    for pt in doc["points"]:
        pname = pt["name"].split("/", 2)[2]
        assert pt["name"] == f"{pt['method']}/{pt['pass']}/{pname}"
        if (pname, pt["pass"]) not in seen:
            seen.add((pname, pt["pass"]))
            out.append((pname, pt["pass"], pt["flops"], pt["problem"]))
    return out


def _assert_peers_match_flashio(axes: list, backends=("flash", "cudnn", "efficient", "math"),
                                validate_records: bool = True) -> list:
    """The peers' points for `axes` are flashio's (problem, pass) pairs x back-ends, in
    flashio's problem order, with flashio's names (method replaced), problems and FLOPs."""
    doc = flashio_points(*axes)
    pairs = _pairs_of(doc)
    pts = peer_config(*axes, "--backend", ",".join(backends)).points
    assert len(pts) == len(pairs) * len(backends), (axes, len(pts), len(pairs))
    problems = list(dict.fromkeys(p[0] for p in pairs))  # first-seen order
    expect = []
    for pname in problems:
        for be in backends:
            for q in pairs:
                if q[0] == pname:
                    expect.append((f"{ps.method_name(be)}/{q[1]}/{pname}", q[2], q[3]))
    got = [(p.name(), p.flops, p.problem_json) for p in pts]
    assert got == expect, (axes, got[:3], expect[:3])
    for p in pts:
        rec = ps.build_record(p, 0, "skipped", p.skip or "not run")
        assert rec["name"] == p.name() and rec["flops"] == p.flops and rec["problem"] == p.problem_json
        errs = validate_record(rec) if validate_records else []
        assert not errs, (rec["name"], errs)
    return pts


def test_a_preset_gives_flashios_points():
    pts = _assert_peers_match_flashio(["--preset", "fa2-figure5", "--seqlen", "512,2048"])
    # fa2-figure5 runs standard, flash1 and flash2: each problem once per back-end all the same
    assert len(pts) == 2 * 2 * 2 * 4 and not any(p.skip for p in pts)  # N x d x causal x back-ends
    assert pts[0].name() == "sdpa_flash/fwd/b:32/h:32/n:512/d:64/fp16"
    # a preset with dropout and key padding: every point skipped, with the reason
    pts = _assert_peers_match_flashio(["--preset", "fa1-table16", "--seqlen", "1024"], ("flash", "cudnn"))
    assert [p.name() for p in pts] == ["sdpa_flash/fwdbwd/b:16/h:8/n:1024/d:64/fp16/pad/drop:0.1",
                                       "sdpa_cudnn/fwdbwd/b:16/h:8/n:1024/d:64/fp16/pad/drop:0.1"]
    assert all(p.skip.startswith("dropout: SDPA draws its own dropout mask") for p in pts)


def test_a_sweep_file_gives_flashios_points():
    sweep = {"description": "peers test", "sweeps": [
        {"method": ["standard", "flash2"], "pass": ["fwd", "fwdbwd"], "batch": 2, "heads": 8, "kv_heads": [8, 2],
         "seqlen": [128, 1013], "head_dim": [64, 128], "causal": [False, True], "padding": ["none", "random"]},
        {"method": "flash1", "seqlen": [17, 128], "head_dim": 64, "heads": 8, "batch": 2, "dropout": [0, 0.1]},
        {"method": "blocksparse_flash", "seqlen": 512, "pattern": ["butterfly", "random"], "density": 0.25},
        {"method": "flash2", "seqlen": 256, "pass": ["fwd", "bwd"], "deterministic": [False, True],
         "block_c": [0, 64], "mma": ["auto", "mma.sync"]}]}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.json")
        with open(path, "w") as f:
            json.dump(sweep, f)
        pts = _assert_peers_match_flashio(["--sweep", path])
        by_name = {p.name(): p for p in pts}
        # runnable: dense, plain, kv_heads = heads
        assert by_name["sdpa_cudnn/fwdbwd/b:2/h:8/n:1013/d:128/fp16/causal"].skip == ""
        assert by_name["sdpa_math/fwd/b:2/h:8/n:17/d:64/fp16"].skip == ""
        assert by_name["sdpa_flash/bwd/b:1/h:16/n:256/d:64/fp16"].skip == ""
        assert by_name["sdpa_flash/fwd/b:1/h:16/n:256/d:64/fp16/det"].skip == ""  # forwards are deterministic
        # GQA (kv_heads < heads) runs, with enable_gqa
        assert by_name["sdpa_efficient/fwd/b:2/h:8/kvh:2/n:128/d:64/fp16"].skip == ""
        assert by_name["sdpa_flash/fwdbwd/b:2/h:8/kvh:2/n:1013/d:128/fp16/causal"].skip == ""
        # key padding runs with an attn_mask on every back-end but flash, causal too (in the mask)
        for be in ("cudnn", "efficient", "math"):
            assert by_name[f"sdpa_{be}/fwd/b:2/h:8/n:128/d:64/fp16/pad"].skip == ""
            assert by_name[f"sdpa_{be}/fwdbwd/b:2/h:8/kvh:2/n:1013/d:128/fp16/causal/pad"].skip == ""
        # skipped, each with its reason
        reasons = {
            "sdpa_flash/fwd/b:2/h:8/n:128/d:64/fp16/pad": "key padding: SDPA's flash back-end takes no attn_mask",
            "sdpa_cudnn/fwd/b:2/h:8/n:17/d:64/fp16/drop:0.1": "dropout: SDPA draws its own dropout mask",
            "sdpa_math/fwd/b:1/h:16/n:512/d:64/fp16/sparse:butterfly/bs:128": "SDPA has no block-sparse attention",
            "sdpa_flash/bwd/b:1/h:16/n:256/d:64/fp16/det": "deterministic backward",
            "sdpa_flash/fwd/b:1/h:16/n:256/d:64/fp16/tile:0x64": "forced tiles",
            "sdpa_efficient/fwd/b:1/h:16/n:256/d:64/fp16/mma:mma.sync": "forced tensor-core instruction",
        }
        for name, why in reasons.items():
            assert name in by_name, (name, sorted(by_name)[:5])
            assert by_name[name].skip.startswith(why), (name, by_name[name].skip)
        # the dry run says which will be skipped, and why
        r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--sweep", path, "--backend", "flash",
                            "--seqlen", "128", "--pass", "fwd"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "sdpa_flash/fwd/b:2/h:8/n:128/d:64/fp16/pad  skipped: key padding: SDPA's flash back-end takes " \
               "no attn_mask\n" in r.stdout, r.stdout
        assert "sdpa_flash/fwd/b:2/h:8/n:128/d:64/fp16\n" in r.stdout, r.stdout
        assert "to be skipped)" in r.stderr, r.stderr


def test_axes_pass_through_to_flashio():
    axes = ["-b", "2", "--heads", "8", "--kv-heads", "8,4", "-n", "100", "--seqlen-k", "100,300", "-d", "32",
            "--dtype", "bf16", "--causal", "true", "--padding", "none,random", "--dropout", "0,0.2", "--seed", "7",
            "--pass", "fwd+bwd"]
    pts = _assert_peers_match_flashio(axes, ("efficient",))
    assert len(pts) == 16 and all(p.problem_json["seed"] == 7 for p in pts)
    runnable = [p for p in pts if not p.skip]  # key padding too: an attn_mask (the causal part folded in)
    assert [p.name() for p in runnable] == ["sdpa_efficient/fwdbwd/b:2/h:8/n:100/d:32/bf16/causal",
                                            "sdpa_efficient/fwdbwd/b:2/h:8/n:100/nk:300/d:32/bf16/causal",
                                            "sdpa_efficient/fwdbwd/b:2/h:8/kvh:4/n:100/d:32/bf16/causal",
                                            "sdpa_efficient/fwdbwd/b:2/h:8/kvh:4/n:100/nk:300/d:32/bf16/causal",
                                            "sdpa_efficient/fwdbwd/b:2/h:8/n:100/d:32/bf16/causal/pad",
                                            "sdpa_efficient/fwdbwd/b:2/h:8/n:100/nk:300/d:32/bf16/causal/pad",
                                            "sdpa_efficient/fwdbwd/b:2/h:8/kvh:4/n:100/d:32/bf16/causal/pad",
                                            "sdpa_efficient/fwdbwd/b:2/h:8/kvh:4/n:100/nk:300/d:32/bf16/causal/pad"], \
        [p.name() for p in runnable]
    assert runnable[0].problem == ps.Problem(2, 8, 100, 32, "bf16", True, 7)
    assert runnable[3].problem == ps.Problem(2, 8, 100, 32, "bf16", True, 7, kv_heads=4, seqlen_k=300)
    assert runnable[7].problem == ps.Problem(2, 8, 100, 32, "bf16", True, 7, kv_heads=4, seqlen_k=300, padding=True)
    assert all(p.skip.startswith("dropout") for p in pts if p.skip)
    # the sparse axes and tokens/model-dim too
    _assert_peers_match_flashio(["--pattern", "local", "--sparse-window", "2", "--sparse-global", "0",
                                 "--sparse-block", "64", "-n", "1024", "--tokens", "2048", "--model-dim", "512"],
                                ("math",))


def test_default_sweep_and_axes():
    cfg = ps.parse_config(["--out", "x.json"])
    names = [pt.name() for pt in cfg.points]
    # bench/sweep/sweep.cpp default_sweep: 16384 tokens, model dim 2048, N 512..4096, d 64, 128;
    # order dtype, d, causal, heads, batch, N, then method, then pass.
    expect = []
    for d in (64, 128):
        for n in (512, 1024, 2048, 4096):
            for be in ("flash", "cudnn", "efficient", "math"):
                expect.append(f"sdpa_{be}/fwd/b:{16384 // n}/h:{2048 // d}/n:{n}/d:{d}/fp16")
    assert names == expect, names
    assert cfg.reps == 30 and cfg.warmup == 5 and cfg.device == 0 and cfg.flush_l2

    cfg = ps.parse_config(["--backend", "math", "--pass", "fwd,bwd", "--seqlen", "512", "--head-dim", "64",
                           "--causal", "false,true", "--dtype", "fp16,bf16", "--out", "x.json"])
    # Same list and order as `flashio run --dry-run -m standard` with these axes.
    assert [pt.name() for pt in cfg.points] == [
        "sdpa_math/fwd/b:32/h:32/n:512/d:64/fp16",
        "sdpa_math/bwd/b:32/h:32/n:512/d:64/fp16",
        "sdpa_math/fwd/b:32/h:32/n:512/d:64/fp16/causal",
        "sdpa_math/bwd/b:32/h:32/n:512/d:64/fp16/causal",
        "sdpa_math/fwd/b:32/h:32/n:512/d:64/bf16",
        "sdpa_math/bwd/b:32/h:32/n:512/d:64/bf16",
        "sdpa_math/fwd/b:32/h:32/n:512/d:64/bf16/causal",
        "sdpa_math/bwd/b:32/h:32/n:512/d:64/bf16/causal",
    ]
    # --batch/--heads clear the tokens/model-dim rules; an explicit --tokens wins again.
    cfg = ps.parse_config(["--backend", "flash", "-b", "2,3", "--heads", "4,8", "-n", "100,200", "-d", "32",
                           "--out", "x.json"])
    assert [pt.name() for pt in cfg.points] == [
        "sdpa_flash/fwd/b:2/h:4/n:100/d:32/fp16", "sdpa_flash/fwd/b:2/h:4/n:200/d:32/fp16",
        "sdpa_flash/fwd/b:3/h:4/n:100/d:32/fp16", "sdpa_flash/fwd/b:3/h:4/n:200/d:32/fp16",
        "sdpa_flash/fwd/b:2/h:8/n:100/d:32/fp16", "sdpa_flash/fwd/b:2/h:8/n:200/d:32/fp16",
        "sdpa_flash/fwd/b:3/h:8/n:100/d:32/fp16", "sdpa_flash/fwd/b:3/h:8/n:200/d:32/fp16",
    ]
    # --batch and --tokens both set the batch: refused, not one silently ignored (issue 21)
    try:
        ps.parse_config(["--backend", "flash", "-b", "2", "--tokens", "800", "-n", "100,200", "-d", "32",
                         "--out", "x.json"])
        assert False, "--batch with --tokens was accepted"
    except ps.BadInput as e:
        assert "--batch and --tokens both set the batch" in str(e), e
    cfg = ps.parse_config(["--backend", "flash", "--tokens", "800", "-n", "100,200", "-d", "32", "--out", "x.json"])
    assert [pt.name() for pt in cfg.points] == ["sdpa_flash/fwd/b:8/h:64/n:100/d:32/fp16",
                                                "sdpa_flash/fwd/b:4/h:64/n:200/d:32/fp16"]
    cfg = ps.parse_config(["--tokens", "4096", "--model-dim", "1024", "-n", "1024", "-d", "128", "--pass",
                           "fwd+bwd", "--backend", "cudnn", "--backend", "flash", "--seed", "7", "--reps", "3",
                           "--warmup", "0", "--device", "1", "--run-id", "abc", "--out", "x.json"])
    assert [pt.name() for pt in cfg.points] == ["sdpa_cudnn/fwdbwd/b:4/h:8/n:1024/d:128/fp16",
                                                "sdpa_flash/fwdbwd/b:4/h:8/n:1024/d:128/fp16"]
    assert cfg.points[0].problem.seed == 7 and cfg.reps == 3 and cfg.warmup == 0 and cfg.device == 1
    assert cfg.run_id == "abc"


BAD_ARGS = [
    (["--counters", "all"], "--counters: 'all' is not one of off, dram, full"),
    (["--seqlen", "3000"], "--tokens 16384 is not a positive multiple of seqlen 3000"),
    (["--model-dim", "100"], "--model-dim 100 is not a positive multiple of head-dim 64"),
    (["--dtype", "fp32"], "--dtype: 'fp32' is not one of fp16, bf16"),
    (["--causal", "maybe"], "--causal: 'maybe' is not a boolean"),
    (["--pass", "xyz"], "--pass: 'xyz' is not one of fwd, bwd, fwdbwd"),
    (["--seqlen", "0"], "--seqlen: 0 is below the minimum 1"),
    (["--seqlen", "1,,2"], "--seqlen: empty value"),
    (["--head-dim", "6x"], "--head-dim: '6x' is not an integer"),
    (["--backend", "triton"], "--backend: unknown back-end 'triton'"),
    (["--reps", "0"], "--reps must be >= 1"),
    (["--warmup", "-1"], "--warmup must be >= 0"),
    (["--device", "-1"], "--device: -1 is below the minimum 0"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--seqlen"], "expected one argument"),
    (["--preset", "nope"], "--preset: unknown preset 'nope'"),
    (["--padding", "left"], "--padding: 'left' is not one of none, random"),
    (["--heads", "32", "--kv-heads", "12"], "divisible by kv-heads"),
    (["--sweep", "/nonexistent/sweep.json"], "/nonexistent/sweep.json"),
    (["--tokens", " "], "--tokens: empty value"),
    (["--method", "flash2"], "unrecognized arguments: --method"),
    (["--flashio", "/nonexistent/flashio"], "--flashio: no flashio binary at '/nonexistent/flashio'"),
]


def test_parse_errors_in_process():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        for args, want in BAD_ARGS:
            err = io.StringIO()
            with redirect_stderr(err), redirect_stdout(io.StringIO()):
                rc = ps.main(args + ["--out", out])
            lines = err.getvalue().splitlines()
            assert rc == 2, (args, rc)
            assert len(lines) == 1 and lines[0].startswith("peers_sdpa: error: "), (args, lines)
            assert want in lines[0], (args, lines[0], want)
            assert os.listdir(tmp) == [], (args, os.listdir(tmp))
        # --out missing, or not writable
        for args, want in ((["--seqlen", "512"], "--out is required"),
                           (["--out", os.path.join(tmp, "no", "such", "dir", "r.json")], "does not exist"),
                           (["--out", tmp], "is a directory")):
            err = io.StringIO()
            with redirect_stderr(err):
                rc = ps.main(args)
            assert rc == 2 and want in err.getvalue() and len(err.getvalue().splitlines()) == 1, (args, err.getvalue())
        assert os.listdir(tmp) == []


def test_parse_errors_subprocess():
    """The real command line: exit status 2, one stderr line, no output file, no torch needed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        for args in (["--seqlen", "3000", "--out", out], ["--dtype", "fp8", "--out", out], ["--out"]):
            r = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, timeout=60)
            assert r.returncode == 2, (args, r.returncode, r.stderr)
            assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("peers_sdpa: error: "), r.stderr
            assert r.stdout == ""
            assert not os.path.exists(out) and os.listdir(tmp) == []
        r = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "--backend" in r.stdout and "--model-dim" in r.stdout
        r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--backend", "flash", "-n", "512", "-d", "64"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout == "sdpa_flash/fwd/b:32/h:32/n:512/d:64/fp16\n", (r.stdout, r.stderr)
        # --flashio given (no $FLASHIO_BIN); a preset whose two methods share one problem
        env = {k: v for k, v in os.environ.items() if k != "FLASHIO_BIN"}
        r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--flashio", FLASHIO, "--preset", "figure2-left",
                            "--backend", "math"], capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0 and r.stdout == "sdpa_math/fwdbwd/b:64/h:16/n:1024/d:64/fp16/pad\n", (r.stdout, r.stderr)
        r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--flashio", FLASHIO, "--preset", "figure2-left",
                            "--backend", "flash"], capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0 and r.stdout == (
            "sdpa_flash/fwdbwd/b:64/h:16/n:1024/d:64/fp16/pad  skipped: key padding: SDPA's flash back-end takes no "
            "attn_mask\n"), (r.stdout, r.stderr)
        r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--flashio", os.path.join(tmp, "flashio")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "--flashio: no flashio binary" in r.stderr


# 16-bit words of fill_normal(dtype, seed, stream) from the C++ code (bench/core/inputs.cpp),
# at element indices 0, 1, 2, 3, 1000, 2^18-1, 2^18, 2^18+1 (chunk boundary).
CPP_INDICES = [0, 1, 2, 3, 1000, 262143, 262144, 262145]
CPP_INPUT_WORDS = {
    ("fp16", 24301, 1): [46307, 15342, 48541, 12747, 47732, 45466, 47733, 15065],
    ("fp16", 24301, 4): [46115, 47377, 14855, 15729, 48671, 11460, 14116, 48310],
    ("fp16", 7, 2): [48322, 14980, 16450, 48456, 14488, 45856, 46439, 48430],
    ("fp16", 2**64 - 1, 3): [48348, 48312, 14283, 48522, 46408, 12123, 48209, 13671],
    ("bf16", 24301, 1): [48796, 16254, 49076, 15929, 48975, 48691, 48975, 16219],
    ("bf16", 24301, 4): [48772, 48930, 16193, 16302, 49092, 15768, 16100, 49047],
    ("bf16", 7, 3): [16146, 48833, 48930, 49200, 49078, 48798, 49018, 49109],
    ("bf16", 2**64 - 1, 4): [48978, 16177, 48655, 16193, 16242, 16157, 16243, 48900],
}


def test_input_generator_matches_cpp():
    for (dtype, seed, stream), words in CPP_INPUT_WORDS.items():
        got = [ps.reference_input_bits(dtype, seed, stream, i) for i in CPP_INDICES]
        assert got == words, (dtype, seed, stream, got, words)


def test_bits16_rounding():
    assert ps.f32_to_bits16(1.0, "fp16") == 0x3C00 and ps.f32_to_bits16(-2.0, "fp16") == 0xC000
    assert ps.f32_to_bits16(1.0, "bf16") == 0x3F80
    # bf16 ties to even: 1 + 2^-8 is half-way between 1 and 1 + 2^-7 -> 1
    assert ps.f32_to_bits16(1.0 + 2.0 ** -8, "bf16") == 0x3F80
    assert ps.f32_to_bits16(1.0 + 3 * 2.0 ** -8, "bf16") == 0x3F82


# (batch, head) pairs of rows_to_check() from the C++ code (bench/measure/check.cpp).
CPP_PAIRS = [
    ((32, 32, 512, 64, 0x5EED), "sampled rows", [(0, 0), (9, 3), (13, 12), (31, 31)]),
    ((4, 16, 4096, 128, 0x5EED), "sampled rows", [(0, 0), (1, 3), (1, 12), (3, 15)]),
    ((8, 16, 2048, 64, 7), "sampled rows", [(0, 0), (5, 4), (7, 1), (7, 15)]),
    ((1, 1, 8192, 64, 0x5EED), "sampled rows", [(0, 0)]),
    ((2, 3, 300, 32, 123), "all rows", [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]),
    ((2, 2, 64, 64, 0x5EED), "all rows", [(0, 0), (0, 1), (1, 0), (1, 1)]),
]


def test_check_pairs_match_cpp():
    for (b, h, n, d, seed), scope, pairs in CPP_PAIRS:
        got_pairs, got_scope = ps.check_pairs(ps.Problem(b, h, n, d, seed=seed))
        assert (got_pairs, got_scope) == (pairs, scope), ((b, h, n, d, seed), got_pairs, got_scope)


# --------------------------------------------------------------------------------------
# GQA/MQA and seqlen_k != seqlen_q (decode), paged K/V (issue 20)
# --------------------------------------------------------------------------------------

DECODE_AXES = ["--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--seqlen", "1", "--seqlen-k", "8192,32768",
               "--batch", "8,32"]


def test_decode_points_are_runnable():
    """flashio's decode shapes (GQA 32:8, Nq = 1, Nk up to 32k): every back-end runs them
    (none skipped before torch is asked), under flashio's names with the method replaced."""
    pts = _assert_peers_match_flashio(DECODE_AXES)
    assert len(pts) == 4 * 4 and not any(p.skip for p in pts), [(p.name(), p.skip) for p in pts if p.skip]
    assert pts[0].name() == "sdpa_flash/fwd/b:8/h:32/kvh:8/n:1/nk:8192/d:128/fp16"
    assert pts[-1].name() == "sdpa_math/fwd/b:32/h:32/kvh:8/n:1/nk:32768/d:128/fp16"
    p = pts[-1].problem
    assert p == ps.Problem(32, 32, 1, 128, "fp16", False, 0x5EED, kv_heads=8, seqlen_k=32768)
    assert p.group == 4 and p.q_elements() == 32 * 32 * 1 * 128 and p.kv_elements() == 32 * 8 * 32768 * 128
    # MQA and Nq > Nk as well
    pts = _assert_peers_match_flashio(["-b", "2", "--heads", "8", "--kv-heads", "1", "-n", "300", "--seqlen-k", "17",
                                       "-d", "64", "--causal", "true", "--pass", "fwd,bwd"], ("cudnn", "math"))
    assert len(pts) == 4 and not any(p.skip for p in pts)
    assert pts[0].name() == "sdpa_cudnn/fwd/b:2/h:8/kvh:1/n:300/nk:17/d:64/fp16/causal"
    assert pts[0].problem.group == 8 and pts[0].problem.seqlen_k == 17
    r = subprocess.run([sys.executable, SCRIPT, "--dry-run"] + DECODE_AXES, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "skipped" not in r.stdout and "to be skipped" not in r.stderr, (r.stdout, r.stderr)
    assert "sdpa_cudnn/fwd/b:32/h:32/kvh:8/n:1/nk:8192/d:128/fp16\n" in r.stdout, r.stdout


def test_problem_defaults_and_json():
    # kv_heads, seqlen_k given as 0 (or absent from an older problem object) mean heads, seqlen
    assert ps.Problem(2, 8, 100, 32) == ps.Problem(2, 8, 100, 32, kv_heads=8, seqlen_k=100)
    assert ps.Problem(2, 8, 100, 32).group == 1
    pj = {"batch": 2, "heads": 8, "seqlen_q": 100, "head_dim": 32, "dtype": "bf16", "causal": True, "seed": 7}
    assert ps.Problem.from_json(pj) == ps.Problem(2, 8, 100, 32, "bf16", True, 7)
    pj.update(kv_heads=2, seqlen_k=4096)
    p = ps.Problem.from_json(pj)
    assert (p.kv_heads, p.seqlen_k, p.group) == (2, 4096, 4)


def _paged_json(layout="paged:64"):
    pj = dict(one_point("flash", "fwd", *DECODE_AXES[:-3], "8").problem_json)
    pj["kv_layout"] = layout
    return pj


def _flashio_has_kv_layout() -> bool:
    r = subprocess.run([FLASHIO, "run", "--help"], capture_output=True, text=True, timeout=60)
    return "--kv-layout" in r.stdout


def test_paged_points_are_skipped():
    """A paged K/V cache is a storage layout SDPA does not have: skipped with the reason, on
    every back-end and pass (not run contiguous under a name that says paged)."""
    for be in ps.BACKENDS:
        for ps_ in ("fwd", "bwd"):
            why = ps.unsupported_reason(be, ps_, _paged_json())
            assert why.startswith("paged K/V cache (kv_layout paged:64): SDPA takes contiguous K/V only"), why
    assert ps.unsupported_reason("flash", "fwd", _paged_json("contiguous")) == ""
    if _flashio_has_kv_layout():  # a flashio with --kv-layout (issue 20): the whole way through
        # (records validated only against a schema that has kv_layout: flashio's of issue 20)
        pts = _assert_peers_match_flashio(DECODE_AXES + ["--kv-layout", "contiguous,paged:64"],
                                          validate_records="kv_layout" in SCHEMA["$defs"]["problem"]["properties"])
        paged = [p for p in pts if p.problem_json.get("kv_layout", "contiguous") != "contiguous"]
        assert len(paged) == len(pts) // 2 and all(p.name().endswith("/paged:64") for p in paged)
        assert all(p.skip.startswith("paged K/V cache") for p in paged)
        assert not any(p.skip for p in pts if p not in paged)
    else:
        print("      (this flashio has no --kv-layout: paged points checked on a problem object only)")


def test_kv_page_table_is_flashios_layout():
    """kv_page_table: flashio's kv_pages_of (bench/core/problem.cpp) — every physical page used
    once, dealt in order from a seeded shuffle; dense: ceil(Nk/P) pages a sequence; a paged
    varlen decode: ceil(L_b/P) of its own (none for L_b = 0), -1 past them; the same seed the
    same table, another seed another."""
    dense = ps.Problem(3, 4, 1, 64, kv_heads=2, seqlen_k=200, kv_page=64)
    kv = ps.kv_page_table(dense)
    assert (kv.page, kv.pages) == (64, 12) and [len(r) for r in kv.table] == [4, 4, 4]
    assert sorted(x for r in kv.table for x in r) == list(range(12))
    assert kv.table != [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]  # shuffled
    assert ps.kv_page_table(dense) == kv and ps.kv_page_table(dataclasses.replace(dense, seed=1)) != kv
    varlen = ps.Problem(3, 4, 1, 64, kv_heads=2, seqlen_k=300, kv_page=64, seq_lengths=(130, 0, 300),
                        varlen_packed=True)
    kv = ps.kv_page_table(varlen)
    assert kv.pages == 3 + 0 + 5 and [sum(x >= 0 for x in r) for r in kv.table] == [3, 0, 5]
    assert all(r[n:] == [-1] * (5 - n) for r, n in zip(kv.table, (3, 0, 5)))
    assert sorted(x for r in kv.table for x in r if x >= 0) == list(range(8))
    twin = dataclasses.replace(varlen, varlen_packed=False)  # the padded twin: every sequence 5 pages
    assert ps.kv_page_table(twin).pages == 15


def test_flex_paged_blocks_list_each_sequences_pages():
    """flex_paged_blocks: each sequence's pages, the whole ones full, the one its keys end in
    partial (mask_mod decides it: the cache's length is not the sequence's), a page with no key
    of the sequence left out; every row then lists the other physical pages; and the mask_mod
    maps a physical key to the logical one, hiding other sequences' pages and keys past the length."""
    p = ps.Problem(3, 4, 1, 64, kv_heads=2, seqlen_k=300, kv_page=64, seq_lengths=(130, 0, 300), varlen_packed=True)
    kv = ps.kv_page_table(p)
    fb = ps.flex_paged_blocks(p, kv)
    assert fb.block == 64
    assert fb.full_num == [[2], [0], [4]] and fb.kv_num == [[1], [0], [1]]
    assert fb.full_idx[0][0][:2] == kv.table[0][:2] and fb.kv_idx[0][0][:1] == kv.table[0][2:3]
    assert fb.full_idx[2][0][:4] == kv.table[2][:4] and fb.kv_idx[2][0][:1] == kv.table[2][4:5]
    for rows in (fb.full_idx, fb.kv_idx):
        assert all(sorted(r[0]) == list(range(kv.pages)) for r in rows)
    dense = ps.Problem(2, 4, 1, 64, kv_heads=2, seqlen_k=256, kv_page=128)  # whole pages: all full
    assert ps.flex_paged_blocks(dense, ps.kv_page_table(dense)).kv_num == [[0], [0]]
    # mask_mod on plain integers and lists (the operations torch applies elementwise)
    to_logical = [[-1] * kv.pages for _ in range(3)]
    for b, row in enumerate(kv.table):
        for j, page in enumerate(row):
            if page >= 0:
                to_logical[b][page] = j

    class Row(list):  # to_logical[b, page] and lengths[b] as torch indexes them
        def __getitem__(self, i):
            return list.__getitem__(self, i[0])[i[1]] if isinstance(i, tuple) else list.__getitem__(self, i)

    mm = ps.flex_paged_mask_mod(False, [130, 0, 300], Row(to_logical), 64)
    page2 = kv.table[0][2]  # sequence 0's third page: keys 128..191, of which 128, 129 exist
    assert mm(0, 0, 0, page2 * 64 + 1) and not mm(0, 0, 0, page2 * 64 + 2)
    assert not mm(1, 0, 0, kv.table[0][0] * 64)  # sequence 1 has no page
    assert not mm(0, 0, 0, kv.table[2][0] * 64)  # another sequence's page
    causal = ps.flex_paged_mask_mod(True, [130, 0, 300], Row(to_logical), 64)
    assert causal(2, 0, 5, kv.table[2][0] * 64 + 5) and not causal(2, 0, 5, kv.table[2][0] * 64 + 6)


def test_varlen_decode_points_padded_twin_on_flex_and_masked_sdpa():
    """A varlen decode (--seqlens with --seqlen-q: key lengths, K/V packed): its packed point is
    skipped by every back-end (SDPA and flex take [B, H, N, d]; a point named packed is not run
    padded under that name); its padded twin (--varlen-as padded, named /padded) is skipped by
    SDPA's flash back-end (no attn_mask) and run by cudnn, efficient and math with a key-padding
    attn_mask and by flex with the lengths as key padding: key_lengths are the sequences'
    lengths, a length of 0 included. FLOPs are flashio's: the real keys' only."""
    r = subprocess.run([FLASHIO, "run", "--help"], capture_output=True, text=True, timeout=60)
    if "--seqlen-q" not in r.stdout:
        print("      (this flashio has no --seqlen-q: varlen decode points not checked)")
        return
    axes = ["-b", "5", "--heads", "32", "--kv-heads", "8", "-d", "128", "--seqlens", "uniform:0-3000",
            "--seqlen-q", "1", "--varlen-as", "packed,padded"]
    pts = _assert_peers_match_flashio(axes, ("flash", "cudnn", "efficient", "math", "flex"))
    assert len(pts) == 2 * 5, [p.name() for p in pts]
    packed = [p for p in pts if not p.name().endswith("/padded")]
    padded = [p for p in pts if p.name().endswith("/padded")]
    assert len(packed) == len(padded) == 5
    assert all(p.skip.startswith("packed variable lengths (seqlens uniform:0-3000): SDPA takes [B, H, N, d]")
               for p in packed if p.backend != ps.FLEX), [p.skip for p in packed]
    assert all("its padded twin (--varlen-as padded) runs with the lengths as a key-padding attn_mask" in p.skip
               for p in packed if p.backend != ps.FLEX), [p.skip for p in packed]
    assert [p.skip for p in packed if p.backend == ps.FLEX][0].startswith(
        "packed variable lengths (seqlens uniform:0-3000): flex_attention takes [B, H, N, d]")
    assert [p.skip for p in padded if p.backend == "flash"] == [
        "variable lengths (seqlens uniform:0-3000, padded): key padding: SDPA's flash back-end takes no attn_mask"]
    assert all(p.skip == "" for p in padded if p.backend != "flash"), [p.skip for p in padded]
    lengths = padded[0].problem_json["seq_lengths"]
    for p in padded:  # the real keys' FLOPs, as flashio counts a padded twin: 4·H·Nq·Σ L_b·d
        assert p.flops == 4.0 * 32 * 1 * sum(lengths) * 128, (p.name(), p.flops)
    flex = [p for p in padded if p.backend == ps.FLEX][0]
    assert flex.skip == "", flex.skip
    assert re.fullmatch(r"flex_attention/fwd/b:5/h:32/kvh:8/n:1/nk:\d+/d:128/fp16/varlen:uniform:0-3000/padded",
                        flex.name()), flex.name()
    p = flex.problem
    lengths = flex.problem_json["seq_lengths"]
    assert p.key_padded and not p.padding and ps.key_lengths(p) == lengths
    assert (p.batch, p.seqlen, p.seqlen_k, p.kv_heads) == (5, 1, max(lengths), 8)
    # A dense point has no lengths: as before
    dense = ps.Problem.from_json({"batch": 2, "heads": 8, "seqlen_q": 1, "seqlen_k": 100, "head_dim": 64,
                                  "dtype": "fp16", "causal": False, "seed": 7})
    assert not dense.key_padded and ps.key_lengths(dense) == [100, 100]


def test_max_seqlen_skips_longer_points_with_the_reason():
    """--max-seqlen N: the points longer than N are skipped records with the reason (and the
    caller's why), the others run; a reason of the point's own comes first."""
    cfg = peer_config("--backend", "math", "--seqlen", "1024,8192", "--head-dim", "64", "--max-seqlen", "4096",
                      "--max-seqlen-why", "S and P would not fit")
    short = [p for p in cfg.points if p.problem_json["seqlen_q"] == 1024]
    long = [p for p in cfg.points if p.problem_json["seqlen_q"] == 8192]
    assert short and long
    assert not any(p.skip for p in short)
    assert all(p.skip == "N = 8192 is above --max-seqlen 4096: not run (S and P would not fit)" for p in long), \
        [p.skip for p in long]
    cfg = peer_config("--backend", "flash", "--seqlen", "8192", "--head-dim", "64", "--dropout", "0.1",
                      "--max-seqlen", "4096")
    assert all(p.skip.startswith("dropout") for p in cfg.points), [p.skip for p in cfg.points]
    for bad in (["--max-seqlen", "0"], ["--max-seqlen", "x"], ["--max-seqlen-why", "no limit"]):
        try:
            peer_config("--seqlen", "1024", *bad)
        except ps.BadInput:
            continue
        raise AssertionError(f"{bad} accepted")


def test_check_pairs_use_seqlen_k():
    # all rows when 2*B*H*Nq*Nk*d <= 4e9 (bench/core/reference.cpp reference_cost): b 8, Nk 8192: 5.4e8
    pairs, scope = ps.check_pairs(ps.Problem(8, 32, 1, 128, kv_heads=8, seqlen_k=8192))
    assert scope == "all rows" and len(pairs) == 8 * 32
    # b 32, Nk 32768: 8.6e9: sampled, the same pairs as any problem of that batch, heads and seed
    pairs, scope = ps.check_pairs(ps.Problem(32, 32, 1, 128, kv_heads=8, seqlen_k=32768))
    assert scope == "sampled rows" and pairs == CPP_PAIRS[0][2], pairs
    # Nk, not Nq, sets the cost: Nq 2048 against Nk 16 is cheap
    assert ps.check_pairs(ps.Problem(4, 16, 2048, 64, seqlen_k=16))[1] == "all rows"
    assert ps.check_pairs(ps.Problem(4, 16, 16, 64, seqlen_k=65536))[1] == "sampled rows"


def test_reference_heads():
    p = ps.Problem(2, 8, 5, 16, kv_heads=2, seqlen_k=7)  # group 4
    pairs = [(0, 0), (0, 5), (1, 3), (1, 7)]
    h = ps.reference_heads(p, pairs, with_grad=False)
    assert h.q_pairs == tuple(pairs) and h.kv_heads == ((0, 0), (0, 1), (1, 0), (1, 1))
    assert h.kv_index == (0, 1, 2, 3) and h.checked == (0, 1, 2, 3)
    # with gradients: every query head of the K/V heads read, so that dK, dV sum the whole group
    h = ps.reference_heads(p, pairs, with_grad=True)
    assert h.q_pairs == tuple((b, x) for b in range(2) for x in range(8)) and len(h.kv_heads) == 4
    assert h.kv_index == tuple(b * 2 + x // 4 for b in range(2) for x in range(8))
    assert [h.q_pairs[i] for i in h.checked] == pairs
    # MQA: one K/V head per batch; MHA: the pairs themselves
    h = ps.reference_heads(ps.Problem(3, 4, 1, 8, kv_heads=1, seqlen_k=9), [(0, 0), (2, 3)], with_grad=True)
    assert h.kv_heads == ((0, 0), (2, 0)) and len(h.q_pairs) == 8 and set(h.kv_index) == {0, 1}
    h = ps.reference_heads(ps.Problem(2, 4, 8, 8), [(0, 1), (1, 2)], with_grad=True)
    assert h.q_pairs == ((0, 1), (1, 2)) and h.kv_heads == ((0, 1), (1, 2)) and h.kv_index == (0, 1)
    assert ps.grad_scope_text("sampled rows", 2, 16) == "dq: sampled rows; dk, dv: 2 of 16 K/V heads"



def test_reference_blocks_bound_memory():
    """The float64 reference's blocks: at most 2^25 elements (256 MiB) of scores, or of K or V
    gathered, whatever Nk: decode against 128k keys takes 2 heads per block, one row each."""
    big = ps.REFERENCE_BLOCK_ELEMENTS
    for nq, nk, d in ((1, 131072, 128), (16, 131072, 128), (1, 8192, 128), (4096, 4096, 64), (1, 1 << 26, 64),
                      (65536, 128, 256), (3, 5, 8)):
        rows, heads = ps.reference_blocks(nq, nk, d)
        assert 1 <= rows <= nq and heads >= 1
        assert (heads * rows * nk <= big and heads * nk * d <= big) or (rows == 1 and heads == 1), (nq, nk, d)
    assert ps.reference_blocks(1, 131072, 128) == (1, 2)
    assert ps.reference_blocks(4096, 4096, 64) == (4096, 2)  # as before GQA: blocks of 2 heads x all rows

class NumpyOps:
    """reference_attention's operations on numpy arrays (TorchOps's twins)."""

    def __init__(self, np):
        self.np = np

    def empty_like(self, x):
        return self.np.full_like(x, self.np.nan)  # a row it forgets to write shows

    def zeros_like(self, x):
        return self.np.zeros_like(x)

    def arange(self, start, stop, like):
        return self.np.arange(start, stop)

    def take(self, x, index):
        return x[index]

    def t(self, x):
        return self.np.swapaxes(x, -2, -1)

    def mask_(self, s, mask):
        return self.np.where(mask, -self.np.inf, s)

    def softmax(self, s):
        e = self.np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def softmax_or_zero(self, s):  # a row of only -inf gives zeros (written apart from TorchOps's)
        out = self.np.zeros_like(s)
        seen = self.np.isfinite(s).any(axis=-1)
        out[seen] = self.softmax(s[seen])
        return out

    def rowsum(self, x):
        return x.sum(axis=-1, keepdims=True)

    def index_add_(self, x, index, y):
        self.np.add.at(x, index, y)


def _inputs(p, np):
    """Q, K, V, dO of the problem as float64 arrays, from the suite's generator (pure Python)."""
    def tensor(stream, shape):
        n = int(np.prod(shape))
        words = [ps.reference_input_bits(p.dtype, p.seed, stream, i) for i in range(n)]
        return np.array(words, dtype=np.uint16).view(np.float16).astype(np.float64).reshape(shape)
    qs, kvs = (p.batch, p.heads, p.seqlen, p.head_dim), (p.batch, p.kv_heads, p.seqlen_k, p.head_dim)
    return tensor(1, qs), tensor(2, kvs), tensor(3, kvs), tensor(4, qs)


def _naive_loss(p, q, k, v, do):
    """L = sum(O * dO), O by explicit loops over (b, h, i): query head h reads K/V head
    h // (H / Hkv); causal top-left: key j visible to query i iff j <= i. dL/dX is what
    reference_attention's gradients are (O's gradient being dO)."""
    g = p.heads // p.kv_heads
    total, out = 0.0, {}
    for b in range(p.batch):
        for h in range(p.heads):
            hk = h // g
            for i in range(p.seqlen):
                js = [j for j in range(p.seqlen_k) if not p.causal or j <= i]
                sc = [p.softmax_scale * sum(q[b, h, i, c] * k[b, hk, j, c] for c in range(p.head_dim)) for j in js]
                m = max(sc)
                w = [math.exp(x - m) for x in sc]
                z = sum(w)
                for c in range(p.head_dim):
                    o = sum(w[t] / z * v[b, hk, j, c] for t, j in enumerate(js))
                    out[b, h, i, c] = o
                    total += o * do[b, h, i, c]
    return total, out


def _naive_grads(p, q, k, v, do, np):
    """dQ, dK, dV by hand from P = softmax(S) per (b, h): dV_hk += P^T dO, dP = dO V^T,
    dS = P (dP - rowsum(P dP)), dQ = scale dS K, dK_hk += scale dS^T Q (the sum over the group)."""
    g = p.heads // p.kv_heads
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for b in range(p.batch):
        for h in range(p.heads):
            hk = h // g
            s = p.softmax_scale * (q[b, h] @ k[b, hk].T)
            if p.causal:
                for i in range(p.seqlen):
                    s[i, i + 1:] = -np.inf
            pr = np.exp(s - s.max(axis=1, keepdims=True))
            pr /= pr.sum(axis=1, keepdims=True)
            dv[b, hk] += pr.T @ do[b, h]
            dp = do[b, h] @ v[b, hk].T
            dsc = pr * (dp - (pr * dp).sum(axis=1, keepdims=True))
            dq[b, h] = p.softmax_scale * dsc @ k[b, hk]
            dk[b, hk] += p.softmax_scale * dsc.T @ q[b, h]
    return dq, dk, dv


def test_reference_against_numpy():
    """The float64 reference (reference_heads + reference_attention, as ProblemData drives
    them, here on numpy arrays) for tiny GQA/MQA problems with Nq != Nk, causal or not: O
    against explicit loops, dQ, dK, dV against hand-written per-head gradients and against
    central differences of sum(O * dO); in blocks as small as one row and one head."""
    try:
        import numpy as np
    except ImportError:
        print("      (skipped: no numpy in this Python; /usr/bin/python3 with python3-numpy runs it)")
        return
    ops = NumpyOps(np)
    problems = [
        ps.Problem(2, 4, 3, 8, "fp16", True, 11, kv_heads=2, seqlen_k=5),   # GQA 4:2, decode-like Nq < Nk
        ps.Problem(2, 4, 5, 8, "fp16", True, 12, kv_heads=1, seqlen_k=3),   # MQA, Nq > Nk (rows >= Nk see all)
        ps.Problem(1, 6, 1, 8, "fp16", False, 13, kv_heads=2, seqlen_k=9),  # decode: Nq = 1
        ps.Problem(1, 2, 4, 8, "fp16", True, 14),                           # MHA, square (as before)
    ]
    for p in problems:
        q, k, v, do = _inputs(p, np)
        dq_n, dk_n, dv_n = _naive_grads(p, q, k, v, do, np)
        _, o_loop = _naive_loss(p, q, k, v, do)
        for pairs in ([(b, h) for b in range(p.batch) for h in range(p.heads)], [(0, 0), (p.batch - 1, p.heads - 1)]):
            for block in (ps.REFERENCE_BLOCK_ELEMENTS, 1, 3 * p.seqlen_k * p.head_dim):
                for with_grad in (False, True):
                    h = ps.reference_heads(p, pairs, with_grad)
                    qb, qh = [np.array(x, dtype=np.int64) for x in zip(*h.q_pairs)]
                    kb, kh = [np.array(x, dtype=np.int64) for x in zip(*h.kv_heads)]
                    ref = ps.reference_attention(ops, q[qb, qh], k[kb, kh], v[kb, kh], np.array(h.kv_index),
                                                 do[qb, qh] if with_grad else None, p.softmax_scale, p.causal,
                                                 block_elements=block)
                    rows = np.array(h.checked)
                    cb, ch = [np.array(x) for x in zip(*pairs)]
                    what = (p, len(pairs), block, with_grad)
                    o_want = np.array([[[o_loop[b, hh, i, c] for c in range(p.head_dim)] for i in range(p.seqlen)]
                                       for b, hh in pairs])
                    assert np.allclose(ref["o"][rows], o_want, rtol=1e-12, atol=1e-12), what
                    if with_grad:
                        assert np.allclose(ref["dq"][rows], dq_n[cb, ch], rtol=1e-10, atol=1e-12), what
                        assert np.allclose(ref["dk"], dk_n[kb, kh], rtol=1e-10, atol=1e-12), what
                        assert np.allclose(ref["dv"], dv_n[kb, kh], rtol=1e-10, atol=1e-12), what
        # the hand-written gradients against central differences of L = sum(O * dO)
        eps = 1e-6
        for name, x, grad in (("q", q, dq_n), ("k", k, dk_n), ("v", v, dv_n)):
            for idx in ((0, 0, 0, 1), (p.batch - 1, x.shape[1] - 1, x.shape[2] - 1, p.head_dim - 1)):
                keep = x[idx]
                x[idx] = keep + eps
                up, _ = _naive_loss(p, q, k, v, do)
                x[idx] = keep - eps
                down, _ = _naive_loss(p, q, k, v, do)
                x[idx] = keep
                fd = (up - down) / (2 * eps)
                assert abs(fd - grad[idx]) <= 1e-6 * max(1.0, abs(fd)), (p, name, idx, fd, grad[idx])


def test_gpu_path_on_cpu_torch():
    """Where this Python has torch (any version, CPU is enough; none of SDPA is needed): the
    script's own GPU-side code, ProblemData (inputs from the generator on torch, K/V [B, Hkv,
    Nk, d]), TorchOps + reference_attention and run_check, on the CPU, for GQA/MQA problems
    with Nq != Nk: an exact float64 O, dQ, dK, dV (torch autograd through repeat_interleave,
    as torch's math back-end) passes with |err|/tol ~ 0, the same rounded to the dtype
    passes, one wrong dK head fails."""
    try:
        import torch
    except ImportError:
        print("      (skipped: no torch in this Python; Debian's python3-torch, CPU, runs it)")
        return
    cpu = torch.device("cpu")

    def exact(p, q, k, v, do):
        q, k, v = (t.double().requires_grad_() for t in (q, k, v))
        kr, vr = (t.repeat_interleave(p.heads // p.kv_heads, dim=1) for t in (k, v))
        s = (q @ kr.transpose(-2, -1)) * p.softmax_scale
        if p.causal:  # top-left: key j visible to query i iff j <= i
            s = s.masked_fill(torch.arange(p.seqlen_k)[None, :] > torch.arange(p.seqlen)[:, None], float("-inf"))
        o = torch.softmax(s, -1) @ vr
        return (o.detach(),) + tuple(torch.autograd.grad(o, (q, k, v), do.double()))

    check_pairs = ps.check_pairs
    try:
        for p, budget in ((ps.Problem(2, 8, 3, 16, "fp16", True, 5, kv_heads=2, seqlen_k=70), None),
                          (ps.Problem(3, 4, 1, 32, "bf16", False, 6, kv_heads=1, seqlen_k=300), None),
                          (ps.Problem(2, 4, 50, 16, "fp16", True, 7, kv_heads=4, seqlen_k=20), None),
                          (ps.Problem(5, 8, 4, 16, "fp16", True, 8, kv_heads=2, seqlen_k=200), 1e3)):
            ps.check_pairs = (lambda q, b=budget: check_pairs(q, b)) if budget else check_pairs
            data = ps.ProblemData(torch, p, cpu)
            assert tuple(data.k.shape) == (p.batch, p.kv_heads, p.seqlen_k, p.head_dim)
            for t, stream in ((data.q, 1), (data.k, 2), (data.v, 3), (data.grad_output(), 4)):
                flat = t.reshape(-1).view(torch.int16)
                for i in (0, flat.numel() // 2, flat.numel() - 1):
                    assert int(flat[i]) & 0xFFFF == ps.reference_input_bits(p.dtype, p.seed, stream, i), (p, stream, i)
            o, dq, dk, dv = exact(p, data.q, data.k, data.v, data.grad_output())
            c = ps.run_check(torch, data, o.to(data.q.dtype))
            assert c["passed"] and c["rows_total"] == p.batch * p.heads * p.seqlen, (p, c)
            assert c["scope"] == ("sampled rows" if budget else "all rows"), (p, c["scope"])
            c = ps.run_check(torch, data, o, [dq, dk, dv])
            assert c["passed"] and c["worst_ratio"] < 1e-9, (p, c)
            kv = len({(b, h // p.group) for b, h in data.pairs})
            assert c["grad_scope"].endswith(f"dk, dv: {kv} of {p.batch * p.kv_heads} K/V heads"), c["grad_scope"]
            lo = data.q.dtype
            c = ps.run_check(torch, data, o.to(lo), [dq.to(lo), dk.to(lo), dv.to(lo)])
            assert c["passed"], (p, c)
            bad = dk.clone()
            b, hk = data.pairs[-1][0], data.pairs[-1][1] // p.group
            bad[b, hk] += 1.0
            c = ps.run_check(torch, data, o, [dq, bad, dv])
            t = c["tensors"]
            assert not c["passed"] and t["dk"]["worst_ratio"] > 1 and t["dv"]["worst_ratio"] < 1e-9, c
            assert ps.run_check(torch, data, o)["passed"]  # forward again, on the gradients' reference
    finally:
        ps.check_pairs = check_pairs


def _stats(name, ratio, finite=True, atol=1e-3, rtol=1e-2, elements=64):
    nan = math.nan
    return dict(name=name, max_abs_err=ratio * 1e-3 if finite else nan, max_rel_err=ratio * 1e-2 if finite else nan,
                worst_ratio=ratio if finite else nan, atol=atol, rtol=rtol, elements=elements, finite=finite)


CHECK_SCHEMA = SCHEMA["$defs"]["record"]["properties"]["check"]


def test_tolerances_and_check_object():
    assert ps.tolerance_for("fp16") == (1e-2, 1e-2) and ps.tolerance_for("bf16") == (8e-2, 8e-2)
    # bench/measure/check.cpp gradient_tolerance_for
    assert ps.tolerance_for("fp16", gradient=True) == (2e-2, 2e-2)
    assert ps.tolerance_for("bf16", gradient=True) == (2.5e-1, 2.5e-1)
    # forward: O only, no grad_scope
    c = ps.make_check([_stats("o", 0.2)], 2048, 65536, "sampled rows")
    assert c["passed"] and c["worst_ratio"] == 0.2 and "grad_scope" not in c
    assert set(c["tensors"]) == {"o"} and c["tensors"]["o"]["elements"] == 64
    assert c["lse_checked"] is False and c["rows_checked"] == 2048 and c["rows_total"] == 65536
    assert not validate(c, CHECK_SCHEMA, SCHEMA)
    # backward: the worst over tensors, atol/rtol of O (bench/measure/check.cpp add_tensor)
    scope = ps.grad_scope_text("sampled rows", 4, 1024)
    assert scope == "dq: sampled rows; dk, dv: 4 of 1024 K/V heads"
    c = ps.make_check([_stats("o", 0.2), _stats("dq", 0.5, atol=4e-3, rtol=2e-2), _stats("dk", 0.7, atol=5e-3),
                       _stats("dv", 0.1)], 2048, 65536, "sampled rows", scope)
    assert c["passed"] and c["worst_ratio"] == 0.7
    assert math.isclose(c["max_abs_err"], 0.7e-3) and math.isclose(c["max_rel_err"], 0.7e-2)
    assert c["atol"] == 1e-3 and c["rtol"] == 1e-2 and c["grad_scope"] == scope
    assert list(c["tensors"]) == ["o", "dq", "dk", "dv"] and c["tensors"]["dq"]["atol"] == 4e-3
    assert not validate(c, CHECK_SCHEMA, SCHEMA)
    c = ps.make_check([_stats("o", 0.2), _stats("dq", 1.5), _stats("dk", 0.3), _stats("dv", 2.25)], 10, 10, "all rows")
    assert not c["passed"] and c["worst_ratio"] == 2.25
    assert ps.check_failure_reason(c) == "correctness check failed (|err|/tol per tensor: dq: 1.5 dv: 2.25); not timed"
    # a NaN anywhere: not passed, overall figures null, that tensor's figures null
    c = ps.make_check([_stats("o", 0.2), _stats("dq", 0, finite=False), _stats("dk", 0.3), _stats("dv", 0.3)],
                      10, 10, "all rows")
    assert not c["passed"] and c["max_abs_err"] is None and c["worst_ratio"] is None
    assert c["tensors"]["dq"]["worst_ratio"] is None and c["tensors"]["o"]["worst_ratio"] == 0.2
    assert ps.check_failure_reason(c) == "correctness check failed (|err|/tol per tensor: dq: nan); not timed"
    assert not validate(json.loads(json.dumps(c)), CHECK_SCHEMA, SCHEMA)


def test_summarize():
    t = ps.summarize([3e-3, 1e-3, 2e-3, 4e-3], warmup=5, flushed=True)
    assert t["median_s"] == 2.5e-3 and t["min_s"] == 1e-3 and t["max_s"] == 4e-3
    assert abs(t["mean_s"] - 2.5e-3) < 1e-18
    assert abs(t["stddev_s"] - math.sqrt(((1.5e-3) ** 2 * 2 + (0.5e-3) ** 2 * 2) / 3)) < 1e-15  # sample stddev
    assert t["reps"] == 4 and t["warmup"] == 5 and t["l2_flushed"] is True and t["clock"] == "cuda_events"
    assert t["samples_s"] == [3e-3, 1e-3, 2e-3, 4e-3]  # every repetition, in the order run
    t = ps.summarize([5e-3, 1e-3, 2e-3], warmup=0, flushed=False)
    assert t["median_s"] == 2e-3 and t["l2_flushed"] is False
    assert ps.summarize([1e-3], 0, True)["stddev_s"] == 0.0


class FakeOom(RuntimeError):
    pass


def test_classify_failure():
    st, why = ps.classify_failure(
        RuntimeError("No available kernel. Aborting execution.\nmore"),
        ["Flash attention kernel not used because:",
         "Flash attention requires last dimension of inputs to be divisible by 8. Got Query.size(-1): 12 "
         "(Triggered internally at /pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:123.)"])
    assert st == "skipped" and why.startswith(
        "No available kernel. Aborting execution. (Flash attention kernel not used because: Flash attention requires")
    assert "Triggered internally" not in why and "Got Query.size(-1): 12" in why
    assert ps.classify_failure(NotImplementedError("x"))[0] == "skipped"
    assert ps.classify_failure(FakeOom("CUDA out of memory. Tried to allocate 2 GiB"), oom_type=FakeOom) == \
        ("oom", "CUDA out of memory. Tried to allocate 2 GiB")
    assert ps.classify_failure(RuntimeError("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"))[0] == "oom"
    st, why = ps.classify_failure(ValueError("bad\nthing"))
    assert st == "error" and why == "ValueError: bad | thing"


_AXIS = {"batch": "-b", "heads": "--heads", "seqlen": "-n", "head_dim": "-d", "dtype": "--dtype", "causal": "--causal"}


def _point(pass_="fwd", backend="flash", **kw):
    """The peer point of P(**kw), its problem and FLOPs from flashio."""
    p = P(**kw)
    axes = []
    for field, opt in _AXIS.items():
        axes += [opt, str(getattr(p, field)).lower()]
    return one_point(backend, pass_, *axes)


def sample_records():
    t = ps.summarize([1e-3, 1.1e-3, 0.9e-3], 5, True)
    fwd_chk = ps.make_check([_stats("o", 0.3)], 2 * 4096, 4 * 16 * 4096, "sampled rows")
    bwd_chk = ps.make_check([_stats("o", 0.3), _stats("dq", 0.4), _stats("dk", 0.2), _stats("dv", 0.1)],
                            2 * 4096, 4 * 16 * 4096, "sampled rows", ps.grad_scope_text("sampled rows", 2, 64))
    mem = {"inputs_bytes": 3 << 20, "outputs_bytes": 1 << 20, "workspace_bytes": 0}
    bad = ps.make_check([_stats("o", 0.3), _stats("dq", 0, finite=False), _stats("dk", 0.2), _stats("dv", 0.1)],
                        10, 10, "all rows", ps.grad_scope_text("all rows", 1, 1))
    return [
        ps.build_record(_point(causal=True), 0, "ok", None, fwd_chk, t, mem),
        ps.build_record(_point("bwd", "cudnn", dtype="bf16"), 0, "ok", "", bwd_chk, t, mem),
        ps.build_record(_point("fwd", "efficient", head_dim=512), 1, "skipped",
                        "No available kernel. Aborting execution."),
        ps.build_record(_point("fwdbwd", "math", seqlen=65536, batch=1), 0, "oom", "CUDA out of memory."),
        ps.build_record(_point("bwd", "flash"), 0, "error", ps.check_failure_reason(bad), bad, None, mem),
        ps.build_record(_point("fwd", "math"), 0, "error", "RuntimeError: boom"),
    ]


def test_records_validate_against_schema():
    recs = sample_records()
    for r in recs:
        errs = validate_record(r)
        assert not errs, (r["name"], errs)
    ok = recs[0]
    assert ok["name"] == "sdpa_flash/fwd/b:4/h:16/n:4096/d:64/fp16/causal" and ok["method"] == "sdpa_flash"
    assert ok["counters"] == {"status": "not_collected", "reason": "peers are measured without counters"}
    assert "reason" not in ok and "tiles" not in ok
    assert abs(ok["tflops"] - ok["flops"] / 1e-3 / 1e12) < 1e-9
    assert recs[1]["flops"] == 2.5 * 4.0 * 4 * 16 * 4096 * 4096 * 64
    assert "time" not in recs[2] and "check" not in recs[2] and "tflops" not in recs[2]
    assert recs[4]["check"]["max_abs_err"] is None and not recs[4]["check"]["passed"]


def _profile_doc(records: list, notes=()) -> dict:
    """A `flashio profile --range` file's profile object, as bench/core/profile_log.cpp makes it."""
    return {"profile": {"command": ["python3", "peers_sdpa.py"], "exit_code": 0, "set": "full", "range": ps.PROFILE_RANGE,
                        "launches": len(records), "notes": list(notes), "records": records}}


def test_merge_profile_counters():
    recs = sample_records()
    for r in recs:
        if r["status"] == "ok":
            r["counters"] = dict(ps.COUNTERS_IN_PROFILE)
    counters = {"status": "ok", "set": "full", "passes": 1, "family": "hopper", "chip": "GH100",
                "bytes": {"dram_read": 1000, "dram_write": 500, "l2_read": 4000}, "duration_s": 1e-4,
                "metrics": {"dram__bytes_read.sum": 1000.0}, "absent": {},
                "kernels": [{"name": "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>", "launches": 1,
                             "bytes": {"dram_read": 1000}, "duration_s": 1e-4}]}
    first = {"kind": "range", "name": recs[0]["name"], "launch": 7, "device": 0, "nvtx": [], "counters": counters}
    again = dict(first, launch=9, counters={"status": "unavailable", "reason": "later"})
    kernel = {"kind": "kernel", "name": recs[1]["name"], "launch": 8, "device": 0, "nvtx": [], "counters": counters}
    doc = {"records": recs}
    assert ps.merge_profile_counters(doc, _profile_doc([first, kernel, again], ["a note"])) == 1
    assert recs[0]["counters"] == counters  # the first range of that name
    assert recs[1]["counters"]["status"] == "unavailable" and "a note" in recs[1]["counters"]["reason"]
    assert recs[2]["counters"] == ps.COUNTERS_NOT_COLLECTED  # skipped: never waited for counters
    for r in recs:
        errs = validate_record(r)
        assert not errs, (r["name"], errs)


def test_counters_run_under_flashio_profile_and_pass_its_exit_through():
    """--counters runs the script again under `flashio profile`; without torch the inner run exits
    1, which comes back, and no file is left."""
    if ps_has_torch():
        return  # the inner run would measure: a GPU test
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        r = subprocess.run([sys.executable, SCRIPT, "--counters", "dram", "--seqlen", "512", "--head-dim", "64",
                            "--backend", "flash", "--out", out], capture_output=True, text=True, timeout=300)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "cannot import torch" in r.stderr, r.stderr
        assert os.listdir(tmp) == [], os.listdir(tmp)


def ps_has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def test_validator_rejects_bad_records():
    """The validator must not be vacuous."""
    good = sample_records()[0]
    cases = []
    r = dict(good); del r["flops"]; cases.append(r)
    r = dict(good, status="fine"); cases.append(r)
    r = dict(good, extra=1); cases.append(r)
    r = dict(good, problem=dict(good["problem"], dtype="fp32")); cases.append(r)
    r = dict(good, problem={k: v for k, v in good["problem"].items() if k != "seed"}); cases.append(r)
    r = dict(good, time=dict(good["time"], median_s=0.0)); cases.append(r)
    r = dict(good, check=dict(good["check"], scope="some rows")); cases.append(r)
    r = dict(good, check=dict(good["check"], tensors={"o": {"atol": 1.0}})); cases.append(r)
    r = dict(good, device_index=True); cases.append(r)
    if "kv_layout" in SCHEMA["$defs"]["problem"]["properties"]:  # a pattern keyword (issue 20's schema)
        r = dict(good, problem=dict(good["problem"], kv_layout="paged:x")); cases.append(r)
    for r in cases:
        assert validate_record(r), r


def test_result_file_validates_and_writes_atomically():
    device = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132,
              "l2_bytes": 52428800, "global_memory_bytes": 85045559296}
    build = {"torch_version": "2.11.0", "cuda_version": "12.8", "cudnn_version": 91000,
             "git_revision": "unknown"}
    doc = ps.build_result_file("0123456789abcdef", ps.utc_timestamp(),
                               ps.join_command_line(["scripts/peers_sdpa.py", "--out", "a b.json"]),
                               build, device, sample_records())
    assert doc["command_line"] == "scripts/peers_sdpa.py --out 'a b.json'"
    assert doc["producer"] == "scripts/peers_sdpa.py" and doc["schema"] == "flashio/result"
    errs = validate_file(doc)
    assert not errs, errs
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "peers.json")
        ps.write_result_file(doc, path)
        assert os.listdir(tmp) == ["peers.json"]
        with open(path, encoding="utf-8") as f:
            back = json.load(f)
        assert not validate(back, SCHEMA, SCHEMA)
        assert back["records"][4]["check"]["worst_ratio"] is None
        assert len(back["records"]) == 6
    # created is ISO 8601 UTC
    ts = ps.utc_timestamp()
    assert len(ts) == 20 and ts[4] == "-" and ts[10] == "T" and ts.endswith("Z")
    assert len(ps.new_run_id()) == 16


def test_table():
    text = ps.format_table(sample_records())
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["point", "status", "median", "ms"]
    assert "1.000" in lines[1] and "TFLOP/s" in lines[0] and "skipped" in lines[3]


# --------------------------------------------------------------------------------------
# FlexAttention (--backend flex): points, key lengths, the BlockMask's blocks, the masked
# float64 reference, and the torch side as far as a CPU torch without flex_attention goes.
# --------------------------------------------------------------------------------------

FIG2_RIGHT_DENSITIES = (1, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05)


def _mask_ones(rows) -> int:
    return sum(r.count("1") for r in rows)


def test_flex_points_runnable_and_named_like_flashios():
    """flex runs flashio's points of the FA-2 setting (dense, causal), GQA, Nq != Nk, key
    padding and block-sparse patterns; its method is flex_attention, its names are flashio's
    with the method replaced; dropout and the rest are skipped with the reason."""
    pts = _assert_peers_match_flashio(["--seqlen", "1024,4096", "--head-dim", "64", "--causal", "false,true",
                                       "--pass", "fwd,fwdbwd", "--tokens", "16384", "--model-dim", "2048"],
                                      backends=("flex",))
    assert len(pts) == 2 * 2 * 2 and not any(p.skip for p in pts)
    assert pts[0].name() == "flex_attention/fwd/b:16/h:32/n:1024/d:64/fp16" and pts[0].method == "flex_attention"
    assert all(p.block_mask == () and not p.problem.sparse for p in pts)
    # GQA, Nq != Nk, padding: runnable for flex, padding still skipped for SDPA
    pts = _assert_peers_match_flashio(["--heads", "8", "--kv-heads", "2,8", "--batch", "2", "--seqlen", "100",
                                       "--seqlen-k", "300", "--head-dim", "64", "--padding", "none,random",
                                       "--causal", "false,true", "--pass", "fwd,bwd"], backends=("flex", "flash"))
    flex = [p for p in pts if p.backend == "flex"]
    assert len(flex) == 2 * 2 * 2 * 2 and not any(p.skip for p in flex), [p.skip for p in flex if p.skip]
    pad = [p for p in pts if p.problem_json["padding"] == "random"]
    assert pad and all(p.problem.padding for p in pad)
    assert all(p.skip.startswith("key padding: SDPA's flash back-end") for p in pad if p.backend == "flash")
    # dropout: skipped, with the reason; the others as SDPA's
    for pass_ in ("fwd", "bwd"):
        why = ps.unsupported_reason("flex", pass_, {"head_dim": 64, "softmax_scale": 0.125, "dropout": 0.1})
        assert why.startswith("dropout: flex_attention has no dropout"), why
    base = {"head_dim": 64, "softmax_scale": 0.125}
    assert ps.unsupported_reason("flex", "fwd", dict(base, padding="random")) == ""
    assert ps.unsupported_reason("flex", "bwd", dict(base, deterministic=True)).startswith("deterministic backward")
    assert ps.unsupported_reason("flex", "fwd", dict(base, deterministic=True)) == ""
    assert ps.unsupported_reason("flex", "fwd", dict(base, block_c=64)).startswith("forced tiles")
    assert ps.unsupported_reason("flex", "fwd", dict(base, mma="wgmma")).startswith("forced tensor-core")
    assert ps.unsupported_reason("flex", "fwd", _paged_json()) == ""  # the pages, as flashio lays them out
    assert ps.unsupported_reason("flex", "bwd", _paged_json()).startswith(
        "paged K/V cache (kv_layout paged:64): peers_sdpa.py runs flex_attention on pages forward only")
    assert ps.unsupported_reason("flex", "fwd", dict(base, softmax_scale=0.5)).startswith("softmax scale")
    assert ps.unsupported_reason("flex", "fwd", dict(base, pattern="random")).startswith(
        "block-sparse pattern random: flashio listed no block mask")
    assert ps.unsupported_reason("flex", "fwd", dict(base, pattern="random"), has_mask=True) == ""
    assert ps.unsupported_reason("flash", "fwd", dict(base, pattern="random"), has_mask=True).startswith(
        "SDPA has no block-sparse attention")
    # the back-end's names on the command line
    named = peer_config("--backend", "flex_attention,FLEX", "--seqlen", "512", "--head-dim", "64").points
    assert {p.backend for p in named} == {"flex"}
    try:
        peer_config("--backend", "flexx")
        raise AssertionError("no error")
    except ps.BadInput as e:
        assert "known: flash, cudnn, efficient, math, flex" in str(e), e
    # the default is still the four SDPA back-ends
    assert {p.backend for p in peer_config("--seqlen", "512", "--head-dim", "64").points} == set(ps.BACKENDS)


def test_flex_block_sparse_points_carry_flashios_mask():
    """A block-sparse point of flex carries the block mask flashio lists for its problem (the
    dry run's block_masks, what blocksparse_flash runs), checked against the record's measured
    density and block counts; figure2-right's points all run; a mask of the wrong shape is a
    runtime failure, a missing one a skipped point."""
    axes = ["--pattern", "random,butterfly,local", "--density", "0.3", "--seqlen", "1024,1000", "--batch", "2",
            "--heads", "2", "--head-dim", "64", "--sparse-block", "128,256", "--pass", "fwd,fwdbwd"]
    doc = flashio_points(*axes)
    pts = _assert_peers_match_flashio(axes, backends=("flex", "efficient"))
    for p in pts:
        if p.backend == "efficient":
            assert p.skip.startswith("SDPA has no block-sparse attention"), p.skip
            continue
        assert not p.skip, p.skip
        assert p.block_mask == tuple(doc["block_masks"][p.problem_name]), p.name()
        rows, cols = p.problem_json["sparse_blocks"]
        assert len(p.block_mask) == rows and all(len(r) == cols for r in p.block_mask)
        assert _mask_ones(p.block_mask) == round(p.problem_json["density"] * rows * cols)
        pr = p.problem
        assert pr.sparse and pr.sparse_block == p.problem_json["sparse_block"] and pr.block_mask == p.block_mask
    # figure2-right: dense flash2/standard points and random masks of ten densities, fwd and fwdbwd
    pts = peer_config("--preset", "figure2-right", "--backend", "flex").points
    assert len(pts) == 2 + 10 * 2 and not any(p.skip for p in pts), [p.skip for p in pts if p.skip]
    sparse = [p for p in pts if p.block_mask]
    assert len(sparse) == 20 and all(len(p.block_mask) == 32 and len(p.block_mask[0]) == 32 for p in sparse)
    want = {d: round(d * 1024) for d in FIG2_RIGHT_DENSITIES}
    for p in sparse:
        assert _mask_ones(p.block_mask) == want[p.problem_json["sparse_target_density"]], p.name()
    assert pts[0].name() == "flex_attention/fwd/b:16/h:8/n:4096/d:64/fp16"
    # ... the problems (and masks) of scripts/reproduce_blocksparse.sh's flashio run, which flex runs beside it
    script = flashio_points("--method", "flash2,standard,blocksparse_flash,blocksparse_standard", "--batch", "16",
                            "--heads", "8", "--head-dim", "64", "--seqlen", "4096", "--pattern", "none,random",
                            "--density", ",".join(str(d) for d in FIG2_RIGHT_DENSITIES), "--sparse-block", "128",
                            "--pass", "fwd,fwdbwd")
    assert {(p.problem_name, p.pass_) for p in pts} == {(n, q) for n, q, _, _ in _pairs_of(script)}
    assert all(p.block_mask == tuple(script["block_masks"][p.problem_name]) for p in sparse)
    assert sparse[0].name() == "flex_attention/fwd/b:16/h:8/n:4096/d:64/fp16/sparse:random/s:1/bs:128"
    # a flashio without block_masks: skipped with the reason; a malformed mask: a runtime failure
    bare = dict(doc)
    del bare["block_masks"]
    for p in ps.peer_points(bare, ["flex"]):
        assert p.skip.startswith("block-sparse pattern") and "no block mask" in p.skip and p.block_mask == ()
    bad = json.loads(json.dumps(doc))
    key = next(iter(bad["block_masks"]))
    bad["block_masks"][key][0] = bad["block_masks"][key][0][:-1]
    try:
        ps.peer_points(bad, ["flex"])
        raise AssertionError("no error")
    except ps.RuntimeFailure as e:
        assert "block mask of " + key in str(e) and "is not" in str(e), e


def test_flex_dry_run_lists_and_skips():
    """The script's own --dry-run (a subprocess, as a person runs it): flex points listed as
    runnable, dropout ones with `skipped: dropout: ...`, and the count of skipped points."""
    r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--backend", "flex", "--batch", "2", "--heads", "4",
                        "--seqlen", "256", "--head-dim", "64", "--dropout", "0,0.1", "--pattern", "none,butterfly",
                        "--pass", "fwd,fwdbwd"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 * 2 * 2, lines
    run = [l for l in lines if "  skipped: " not in l]
    skipped = [l for l in lines if "  skipped: " in l]
    assert run == ["flex_attention/fwd/b:2/h:4/n:256/d:64/fp16", "flex_attention/fwdbwd/b:2/h:4/n:256/d:64/fp16",
                   "flex_attention/fwd/b:2/h:4/n:256/d:64/fp16/sparse:butterfly/bs:128",
                   "flex_attention/fwdbwd/b:2/h:4/n:256/d:64/fp16/sparse:butterfly/bs:128"], run
    assert len(skipped) == 4 and all("/drop:0.1" in l and "skipped: dropout: flex_attention has no dropout" in l
                                     for l in skipped), skipped
    assert r.stderr.strip() == "8 points (4 to be skipped)", r.stderr


def test_key_lengths_match_cpp():
    """key_lengths() against bench/core/problem.cpp key_lengths() (values printed by the C++ for
    these problems): FlashAttention's random padding, lengths in [max(1, Nk - 20), Nk]."""
    for (b, n, seed), want in (((6, 1000, 0x5EED), [983, 995, 994, 984, 992, 996]),
                               ((4, 13, 7), [3, 3, 1, 11]),
                               ((3, 5, (1 << 64) - 1), [4, 2, 1])):
        assert ps.key_lengths(ps.Problem(b, 1, n, 16, seed=seed, padding=True)) == want, (b, n, seed)
        assert ps.key_lengths(ps.Problem(b, 1, n, 16, seed=seed)) == [n] * b
    # Nk, not Nq, bounds them (decode-like shapes)
    lens = ps.key_lengths(ps.Problem(50, 1, 1, 16, seed=3, padding=True, seqlen_k=40))
    assert all(20 <= x <= 40 for x in lens) and len(set(lens)) > 5


def _flex_problem(rows, bs, nq=None, nk=None, causal=False, padding=False, batch=1, seed=9, d=16):
    nq = nq if nq is not None else len(rows) * bs
    nk = nk if nk is not None else len(rows[0]) * bs
    return ps.Problem(batch, 2, nq, d, "fp16", causal, seed, seqlen_k=nk, padding=padding, block_mask=tuple(rows),
                      sparse_block=bs)


def test_flex_blocks_of_small_block_matrices():
    """The BlockMask arrays (kv_num_blocks/kv_indices, full_*) from a 0/1 block matrix, by hand:
    listed columns first, increasing, then the others (Flex's own order); an all-zero row lists
    nothing; causal turns the diagonal blocks partial and drops those above it."""
    rows = ("101", "000", "011")
    fb = ps.flex_blocks(_flex_problem(rows, 128))
    assert fb.block == 128 and not fb.mask_pattern
    assert fb.full_num == [[2, 0, 2]] and fb.full_idx == [[[0, 2, 1], [0, 1, 2], [1, 2, 0]]]
    assert fb.kv_num == [[0, 0, 0]] and fb.kv_idx == [[[0, 1, 2], [0, 1, 2], [0, 1, 2]]]
    fb = ps.flex_blocks(_flex_problem(rows, 128, causal=True))
    assert fb.kv_num == [[1, 0, 1]] and fb.kv_idx == [[[0, 1, 2], [0, 1, 2], [2, 0, 1]]]
    assert fb.full_num == [[0, 0, 1]] and fb.full_idx == [[[0, 1, 2], [0, 1, 2], [1, 0, 2]]]
    # dense, Nq = 300 (a tail block of 44 rows), Nk = 200, causal: row 0 sees block 0 (partial) only
    fb = ps.flex_blocks(ps.Problem(1, 1, 300, 16, causal=True, seqlen_k=200))
    assert fb.kv_num == [[1, 1, 0]] and fb.full_num == [[0, 1, 2]]
    assert fb.kv_idx[0][1][:1] == [1] and fb.full_idx[0][2][:2] == [0, 1]
    # key padding: one entry per sequence; lengths 3, 3, 1, 11 of Nk = 13 (test_key_lengths_match_cpp)
    fb = ps.flex_blocks(ps.Problem(4, 1, 13, 16, seed=7, padding=True), block=4)
    assert fb.kv_num == [[1] * 4, [1] * 4, [1] * 4, [1] * 4] and fb.full_num == [[0] * 4, [0] * 4, [0] * 4, [2] * 4]
    assert [i[0][0] for i in fb.kv_idx] == [0, 0, 0, 2] and fb.full_idx[3][0][:2] == [0, 1]
    # sparse block 64 under Flex's 128: a Flex block spans 2 x 2 pattern blocks, mask_mod looks the pattern up
    fb = ps.flex_blocks(_flex_problem(("1100", "1100", "0010", "0001"), 64))
    assert fb.mask_pattern and fb.full_num == [[1, 0]] and fb.kv_num == [[0, 1]]
    assert fb.full_idx[0][0] == [0, 1] and fb.kv_idx[0][1] == [1, 0]
    # every array is rectangular: R rows of C indices, a permutation of 0..C-1
    for f in (ps.flex_blocks(_flex_problem(rows, 128, causal=True)), fb):
        for idx in f.kv_idx + f.full_idx:
            assert all(sorted(r) == list(range(len(idx[0]))) for r in idx)


def _element_allowed(p, b, i, j, lengths):
    """flashio's element mask (bench/core/reference.cpp): pattern, causal (top-left), padding."""
    if p.sparse and p.block_mask[i // p.sparse_block][j // p.sparse_block] != "1":
        return False
    if p.causal and j > i:
        return False
    return j < lengths[b]


def test_flex_blocks_reproduce_the_element_mask():
    """For many small problems (sparse blocks that are multiples of the Flex block, divide it,
    or neither; tails; causal; padding; empty pattern rows): an element is allowed by flashio's
    mask iff its Flex block is full, or partial and the mask_mod's conditions allow it; a full
    block is allowed everywhere; and where the sparse block is a multiple of the Flex block, no
    listed block is empty (Flex runs exactly the blocks that have work)."""
    import random
    rng = random.Random(5)
    cases = 0
    for F in (2, 4):
        for bs in (1, 2, 3, 4, 8):
            for causal in (False, True):
                for padding in (False, True):
                    nq, nk = rng.randint(1, 13), rng.randint(1, 15)
                    R, C = -(-nq // bs), -(-nk // bs)
                    rows = ["".join(rng.choice("01") for _ in range(C)) for _ in range(R)]
                    rows[rng.randrange(R)] = "0" * C  # an empty row
                    p = _flex_problem(rows, bs, nq, nk, causal, padding, batch=3, seed=rng.randrange(1 << 30))
                    fb = ps.flex_blocks(p, block=F)
                    assert fb.mask_pattern == (bs % F != 0)
                    lengths = ps.key_lengths(p)
                    for b in range(p.batch):
                        e = b if padding else 0
                        R2 = -(-nq // F)
                        for r in range(R2):
                            full = set(fb.full_idx[e][r][:fb.full_num[e][r]])
                            part = set(fb.kv_idx[e][r][:fb.kv_num[e][r]])
                            assert not (full & part)
                            for i in range(r * F, min(nq, (r + 1) * F)):
                                for j in range(nk):
                                    c = j // F
                                    want = _element_allowed(p, b, i, j, lengths)
                                    mod = ((not causal or i >= j) and j < lengths[b] and
                                           (not fb.mask_pattern or p.block_mask[i // bs][j // bs] == "1"))
                                    got = c in full or (c in part and mod)
                                    assert got == want, (p, F, b, i, j)
                            if bs % F == 0:  # exact: a listed block has an allowed element
                                for c in part | full:
                                    assert any(_element_allowed(p, b, i, j, lengths)
                                               for i in range(r * F, min(nq, (r + 1) * F))
                                               for j in range(c * F, min(nk, (c + 1) * F))), (p, r, c)
                    cases += 1
    assert cases == 40


def _masked_naive(p, q, k, v, do, lengths, np):
    """O, dQ, dK, dV by explicit loops over (b, h, i) with flashio's element mask: pattern,
    causal, key padding; a row that sees no key has O = 0 and zero gradients."""
    g = p.heads // p.kv_heads
    o, dq = np.zeros_like(q), np.zeros_like(q)
    dk, dv = np.zeros_like(k), np.zeros_like(v)
    for b in range(p.batch):
        for h in range(p.heads):
            hk = h // g
            for i in range(p.seqlen):
                js = [j for j in range(p.seqlen_k) if _element_allowed(p, b, i, j, lengths)]
                if not js:
                    continue
                sc = [p.softmax_scale * sum(q[b, h, i, c] * k[b, hk, j, c] for c in range(p.head_dim)) for j in js]
                m = max(sc)
                w = [math.exp(x - m) for x in sc]
                z = sum(w)
                pr = [x / z for x in w]
                for c in range(p.head_dim):
                    o[b, h, i, c] = sum(pr[t] * v[b, hk, j, c] for t, j in enumerate(js))
                dp = [sum(do[b, h, i, c] * v[b, hk, j, c] for c in range(p.head_dim)) for j in js]
                dd = sum(pr[t] * dp[t] for t in range(len(js)))
                for t, j in enumerate(js):
                    ds = pr[t] * (dp[t] - dd)
                    for c in range(p.head_dim):
                        dq[b, h, i, c] += p.softmax_scale * ds * k[b, hk, j, c]
                        dk[b, hk, j, c] += p.softmax_scale * ds * q[b, h, i, c]
                        dv[b, hk, j, c] += pr[t] * do[b, h, i, c]
    return o, dq, dk, dv


def test_masked_reference_against_numpy():
    """reference_attention with key padding and a block mask (as ProblemData drives it for
    flex), on numpy arrays, against explicit loops: GQA, Nq != Nk, causal, rows whose blocks
    are all zero (O = 0, zero gradients), blocks as small as one row and one head."""
    try:
        import numpy as np
    except ImportError:
        print("      (skipped: no numpy in this Python; /usr/bin/python3 with python3-numpy runs it)")
        return
    ops = NumpyOps(np)
    problems = [
        _flex_problem(("10", "00", "01"), 2, nq=5, nk=4, causal=True, padding=True, batch=2, seed=21, d=8),
        ps.Problem(2, 4, 6, 8, "fp16", False, 22, kv_heads=2, seqlen_k=9, padding=True, block_mask=("101", "000"),
                   sparse_block=4),
        ps.Problem(1, 2, 5, 8, "fp16", True, 23, kv_heads=1, seqlen_k=5, block_mask=("100", "001", "111"),
                   sparse_block=2),
        ps.Problem(3, 2, 4, 8, "fp16", True, 24, seqlen_k=9, padding=True),  # padding only
    ]
    for p in problems:
        q, k, v, do = _inputs(p, np)
        lengths = ps.key_lengths(p)
        o_n, dq_n, dk_n, dv_n = _masked_naive(p, q, k, v, do, lengths, np)
        empty = [(b, i) for b in range(p.batch) for i in range(p.seqlen)
                 if not any(_element_allowed(p, b, i, j, lengths) for j in range(p.seqlen_k))]
        if p.sparse:
            assert empty, p  # each sparse case has a row that sees no key
        bm = np.array([[ch == "1" for ch in r] for r in p.block_mask], dtype=bool) if p.sparse else None
        pairs = [(b, h) for b in range(p.batch) for h in range(p.heads)]
        for block in (ps.REFERENCE_BLOCK_ELEMENTS, 1):
            h = ps.reference_heads(p, pairs, True)
            qb, qh = [np.array(x, dtype=np.int64) for x in zip(*h.q_pairs)]
            kb, kh = [np.array(x, dtype=np.int64) for x in zip(*h.kv_heads)]
            ref = ps.reference_attention(ops, q[qb, qh], k[kb, kh], v[kb, kh], np.array(h.kv_index), do[qb, qh],
                                         p.softmax_scale, p.causal, block_elements=block,
                                         key_len=np.array(lengths)[qb] if p.padding else None,
                                         block_mask=bm, sparse_block=p.sparse_block)
            rows = np.array(h.checked)
            cb, ch = [np.array(x) for x in zip(*pairs)]
            assert np.isfinite(ref["o"]).all() and np.isfinite(ref["dq"]).all(), p
            assert np.allclose(ref["o"][rows], o_n[cb, ch], rtol=1e-12, atol=1e-12), (p, block)
            assert np.allclose(ref["dq"][rows], dq_n[cb, ch], rtol=1e-10, atol=1e-12), (p, block)
            assert np.allclose(ref["dk"], dk_n[kb, kh], rtol=1e-10, atol=1e-12), (p, block)
            assert np.allclose(ref["dv"], dv_n[kb, kh], rtol=1e-10, atol=1e-12), (p, block)
            for b, i in empty:
                assert (o_n[b, :, i] == 0).all() and (ref["o"][rows][cb == b][:, i] == 0).all()
        # the mask matters: without it the reference differs
        if p.sparse:
            plain = ps.reference_attention(ops, q[qb, qh], k[kb, kh], v[kb, kh], np.array(h.kv_index), None,
                                           p.softmax_scale, p.causal)
            assert not np.allclose(plain["o"][rows], o_n[cb, ch]), p


def test_flex_paged_cache_on_cpu_torch():
    """Where this Python has torch (CPU): attention over ProblemData.paged_kv()'s cache, with the
    keys flex would see — a page listed among the row's full blocks, or among its partial ones
    where flex_paged_mask_mod allows the key — equals the masked attention over the logical K, V
    (dense paged with a partial last page, key padding, a paged varlen decode with a sequence of
    length 0, causal, GQA)."""
    try:
        import torch
    except ImportError:
        print("      (skipped: no torch in this Python; Debian's python3-torch, CPU, runs it)")
        return
    cpu = torch.device("cpu")
    for p in (ps.Problem(2, 4, 1, 16, "fp16", False, 41, kv_heads=2, seqlen_k=200, kv_page=64),
              ps.Problem(3, 4, 2, 16, "fp16", False, 42, kv_heads=1, seqlen_k=150, kv_page=64, padding=True),
              ps.Problem(3, 4, 1, 16, "bf16", False, 43, kv_heads=2, seqlen_k=300, kv_page=64,
                         seq_lengths=(130, 0, 300), varlen_packed=True),
              ps.Problem(2, 2, 3, 16, "fp16", True, 44, seqlen_k=70, kv_page=64)):
        data = ps.ProblemData(torch, p, cpu)
        k_cache, v_cache, kv, to_logical = data.paged_kv()
        P = kv.page
        assert k_cache.shape == (1, p.kv_heads, kv.pages * P, p.head_dim)
        fb = ps.flex_paged_blocks(p, kv)
        lengths = ps.key_lengths(p)
        mm = ps.flex_paged_mask_mod(p.causal, torch.tensor(lengths, dtype=torch.int32), to_logical, P)
        kk = torch.arange(kv.pages * P)
        out = torch.zeros(p.batch, p.heads, p.seqlen, p.head_dim, dtype=torch.float64)
        ref = torch.zeros_like(out)
        for b in range(p.batch):
            full = set(fb.full_idx[b][0][:fb.full_num[b][0]])
            part = set(fb.kv_idx[b][0][:fb.kv_num[b][0]])
            for h in range(p.heads):
                hk = h // p.group
                for i in range(p.seqlen):
                    seen = torch.tensor([(int(x) // P) in full or ((int(x) // P) in part and bool(mm(b, h, i, x)))
                                         for x in kk])
                    logical = torch.tensor([j < lengths[b] and (not p.causal or j <= i) for j in range(p.seqlen_k)])
                    q = data.q[b, h, i].double()
                    for keys, vals, allow, o in ((k_cache[0, hk], v_cache[0, hk], seen, out),
                                                 (data.k[b, hk], data.v[b, hk], logical, ref)):
                        if allow.any():
                            w = torch.softmax((keys.double() @ q * p.softmax_scale).masked_fill(~allow, float("-inf")), 0)
                            o[b, h, i] = w @ vals.double()
        assert torch.allclose(out, ref, rtol=1e-12, atol=1e-12), (p, (out - ref).abs().max())


def test_flex_torch_side_on_cpu_torch():
    """Where this Python has torch (CPU; Debian's 1.13 has no flex_attention, so neither
    BlockMask.from_kv_blocks nor the compiled kernel runs here): ProblemData's key lengths and
    block mask, run_check of an exact masked computation (passes; a wrong value in a padded-away
    key's gradient row fails), flex_block_tensors' shapes and dtype, and flex_mask_mod evaluated
    by torch over every (b, q, kv) on the blocks reproducing flashio's element mask."""
    try:
        import torch
    except ImportError:
        print("      (skipped: no torch in this Python; Debian's python3-torch, CPU, runs it)")
        return
    cpu = torch.device("cpu")
    for p in (_flex_problem(("10", "01", "11"), 4, nq=10, nk=7, causal=True, padding=True, batch=3, seed=31),
              ps.Problem(2, 4, 9, 16, "bf16", False, 32, kv_heads=2, seqlen_k=12, padding=True,
                         block_mask=("101", "010", "000"), sparse_block=4),
              ps.Problem(2, 2, 6, 16, "fp16", True, 33, seqlen_k=6),
              # a varlen decode's padded twin: its lengths are the key lengths, one of them 0
              ps.Problem(3, 4, 2, 16, "fp16", False, 34, kv_heads=2, seqlen_k=9, seq_lengths=(9, 0, 5))):
        data = ps.ProblemData(torch, p, cpu)
        lengths = ps.key_lengths(p)
        assert (data.key_lengths is None) == (not p.key_padded)
        if p.key_padded:
            assert data.key_lengths.dtype == torch.int32 and data.key_lengths.tolist() == lengths
        assert (data.block_mask is None) == (not p.sparse)
        allowed = torch.tensor([[[_element_allowed(p, b, i, j, lengths) for j in range(p.seqlen_k)]
                                 for i in range(p.seqlen)] for b in range(p.batch)])
        # exact masked attention (autograd through repeat_interleave) passes the check
        q, k, v = (t.double().requires_grad_() for t in (data.q, data.k, data.v))
        kr, vr = (t.repeat_interleave(p.group, dim=1) for t in (k, v))
        s = ((q @ kr.transpose(-2, -1)) * p.softmax_scale).masked_fill(~allowed[:, None], float("-inf"))
        pr = torch.softmax(s, -1).nan_to_num(0.0)  # rows with no key: 0
        o = pr @ vr
        grads = torch.autograd.grad(o, (q, k, v), data.grad_output().double())
        c = ps.run_check(torch, data, o.detach())
        assert c["passed"] and c["worst_ratio"] < 1e-9, (p, c)
        c = ps.run_check(torch, data, o.detach(), list(grads))
        assert c["passed"] and c["worst_ratio"] < 1e-9, (p, c)
        if p.key_padded:  # a key past a sequence's length has dK = dV = 0: a value there fails
            bad = grads[2].clone()
            b = data.pairs[0][0]
            bad[b, data.pairs[0][1] // p.group, lengths[b]:] += 1.0
            if lengths[b] < p.seqlen_k:
                c = ps.run_check(torch, data, o.detach(), [grads[0], grads[1], bad])
                assert not c["passed"] and c["tensors"]["dv"]["worst_ratio"] > 1, c
        # the BlockMask's tensors and the mask_mod, on a Flex block of 4 (the blocks' logic is F-generic)
        fb = ps.flex_blocks(p, block=4)
        kv_num, kv_idx, full_num, full_idx = ps.flex_block_tensors(torch, fb, cpu)
        B2, R2, C2 = (p.batch if p.key_padded else 1), -(-p.seqlen // 4), -(-p.seqlen_k // 4)
        assert tuple(kv_num.shape) == (B2, 1, R2) and tuple(kv_idx.shape) == (B2, 1, R2, C2)
        assert tuple(full_num.shape) == (B2, 1, R2) and tuple(full_idx.shape) == (B2, 1, R2, C2)
        assert all(t.dtype == torch.int32 and t.is_contiguous() for t in (kv_num, kv_idx, full_num, full_idx))
        mm = ps.flex_mask_mod(p.causal, data.key_lengths, data.block_mask if fb.mask_pattern else None,
                              p.sparse_block)
        # Flex passes int32 indices (Inductor indexes with them); torch 1.13's eager indexing wants int64
        idx = torch.int32 if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 0) else torch.int64
        bi = torch.arange(p.batch, dtype=idx)[:, None, None]
        qi = torch.arange(p.seqlen, dtype=idx)[None, :, None]
        ki = torch.arange(p.seqlen_k, dtype=idx)[None, None, :]
        mod = mm(bi, torch.zeros((), dtype=idx), qi, ki) if mm is not None else torch.ones((), dtype=torch.bool)
        mod = mod.expand(p.batch, p.seqlen, p.seqlen_k)
        got = torch.zeros_like(allowed)
        for b in range(p.batch):
            e = b if p.key_padded else 0
            for r in range(R2):
                for n, idx, full in ((full_num, full_idx, True), (kv_num, kv_idx, False)):
                    for c in idx[e, 0, r, :int(n[e, 0, r])].tolist():
                        blk = (b, slice(4 * r, 4 * r + 4), slice(4 * c, 4 * c + 4))
                        got[blk] = True if full else mod[blk]
        assert torch.equal(got, allowed), p
    assert ps.flex_mask_mod(False) is None
    try:  # a torch without flex_attention: flex points are skipped with that reason
        import torch.nn.attention.flex_attention  # noqa: F401
    except ImportError:
        try:
            ps.flex_call(torch, data, cpu)
            raise AssertionError("no error")
        except NotImplementedError as e:
            assert "has no torch.nn.attention.flex_attention (PyTorch >= 2.5)" in str(e), e
            assert ps.classify_failure(e, flex=True)[0] == "skipped"


class _FakeFlex:
    """torch.nn.attention.flex_attention as documented, in float64 on a CPU torch that has none:
    BlockMask.from_kv_blocks keeps its arguments; flex_attention attends, per (b, query block
    row), to the full blocks entirely and to the partial blocks where mask_mod allows (the
    BlockMask's batch dimension broadcast when 1); a row that sees nothing gives 0. It lets
    flex_call's wiring (arrays, BLOCK_SIZE, seq_lengths, mask_mod, scale, enable_gqa) run
    through run_check here; the real kernel runs only on the GPU."""

    def __init__(self, torch):
        self.torch = torch
        self.masks = []
        fake = self

        class BlockMask:
            @classmethod
            def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None, full_kv_indices=None,
                               BLOCK_SIZE=128, mask_mod=None, seq_lengths=None):
                bm = cls()
                bm.args = (kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices)
                bm.BLOCK_SIZE, bm.mask_mod, bm.seq_lengths = BLOCK_SIZE, mask_mod, seq_lengths
                fake.masks.append(bm)
                return bm

        self.BlockMask = BlockMask

    def __call__(self, q, k, v, block_mask=None, scale=None, enable_gqa=False):
        t = self.torch
        B, H, nq, d = q.shape
        hkv, nk = k.shape[1], k.shape[2]
        assert enable_gqa == (hkv < H) and block_mask.seq_lengths == (nq, nk)
        F = block_mask.BLOCK_SIZE
        kv_num, kv_idx, full_num, full_idx = block_mask.args
        allowed = t.zeros(B, nq, nk, dtype=t.bool)
        qi, ki = t.arange(nq)[:, None], t.arange(nk)[None, :]
        for b in range(B):
            e = b if kv_num.shape[0] > 1 else 0
            mod = (block_mask.mask_mod(t.tensor(b), t.tensor(0), qi, ki) if block_mask.mask_mod is not None
                   else t.ones(nq, nk, dtype=t.bool))
            for r in range(kv_num.shape[2]):
                rows = slice(r * F, (r + 1) * F)
                for c in full_idx[e, 0, r, :int(full_num[e, 0, r])].tolist():
                    allowed[b, rows, c * F:(c + 1) * F] = True
                for c in kv_idx[e, 0, r, :int(kv_num[e, 0, r])].tolist():
                    allowed[b, rows, c * F:(c + 1) * F] = mod[rows, c * F:(c + 1) * F]
        kr, vr = (x.double().repeat_interleave(H // hkv, dim=1) for x in (k, v))
        sc = (q.double() @ kr.transpose(-2, -1)) * scale
        pr = t.softmax(sc.masked_fill(~allowed[:, None], float("-inf")), -1).nan_to_num(0.0)
        return (pr @ vr).to(q.dtype)


def test_flex_call_wiring_on_a_documented_stand_in():
    """flex_call on CPU torch with _FakeFlex standing in for torch's module and compiled
    function: the BlockMask it builds (int32 arrays, Flex's block 128, seq_lengths (Nq, Nk),
    mask_mod only where blocks are partial) and the call (scale, enable_gqa) give an O that
    passes run_check against the masked float64 reference, for dense, causal, GQA, Nq != Nk,
    key padding and block-sparse points (sparse block 128, and 64 where mask_mod looks the
    pattern up); a BlockMask missing the padding fails the check."""
    try:
        import torch
    except ImportError:
        print("      (skipped: no torch in this Python; Debian's python3-torch, CPU, runs it)")
        return
    import types
    cpu = torch.device("cpu")
    fake = _FakeFlex(torch)
    names = ("torch.nn.attention", "torch.nn.attention.flex_attention")
    saved = {n: sys.modules.get(n) for n in names}
    module = types.ModuleType(names[1])
    module.BlockMask, module.flex_attention = fake.BlockMask, fake
    if saved[names[0]] is None:
        sys.modules[names[0]] = types.ModuleType(names[0])
    sys.modules[names[1]] = module
    compiled = list(ps._FLEX_COMPILED)
    ps._FLEX_COMPILED[:] = [fake]
    import random
    rng = random.Random(3)

    def rows(nq, nk, bs):
        out = ["".join(rng.choice("01") for _ in range(-(-nk // bs))) for _ in range(-(-nq // bs))]
        out[0] = "0" * len(out[0])  # a row block that sees nothing
        return tuple(out)

    try:
        cases = [
            (ps.Problem(2, 2, 300, 16, "fp16", False, 41), False),
            (ps.Problem(2, 4, 300, 16, "fp16", True, 42, kv_heads=2, seqlen_k=260), True),
            (ps.Problem(3, 2, 300, 16, "bf16", True, 43, seqlen_k=280, padding=True), True),
            (ps.Problem(2, 2, 384, 16, "fp16", False, 44, block_mask=rows(384, 384, 128), sparse_block=128), False),
            (ps.Problem(2, 2, 384, 16, "fp16", True, 46, block_mask=rows(384, 384, 128), sparse_block=128), True),
            (ps.Problem(2, 2, 200, 16, "fp16", False, 45, seqlen_k=330, padding=True,
                        block_mask=rows(200, 330, 64), sparse_block=64), True),
        ]
        for p, has_mod in cases:
            data = ps.ProblemData(torch, p, cpu)
            attn = ps.flex_call(torch, data, cpu)
            bm = fake.masks[-1]
            assert bm.BLOCK_SIZE == 128 and bm.seq_lengths == (p.seqlen, p.seqlen_k)
            assert (bm.mask_mod is not None) == has_mod, p
            assert all(a.dtype == torch.int32 for a in bm.args)
            assert bm.args[0].shape[0] == (p.batch if p.padding else 1)
            o = attn(data.q, data.k, data.v)
            c = ps.run_check(torch, data, o)
            assert c["passed"], (p, c)
            assert ps.flex_call(torch, data, cpu) and fake.masks[-1] is bm  # made once per problem
            if p.padding:  # without the padding the output is wrong, and the check says so
                data.flex_mask = None
                lengths, data.key_lengths = data.key_lengths, None
                attn = ps.flex_call(torch, data, cpu)
                data.key_lengths = lengths
                assert not ps.run_check(torch, data, attn(data.q, data.k, data.v))["passed"], p
    finally:
        ps._FLEX_COMPILED[:] = compiled
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def test_flex_failures_and_records():
    """flex's refusals (torch raises them as ValueError, AssertionError or inside a compiler
    error) are skipped records with torch's message; other exceptions stay errors; a flex
    record validates against the schema with the method flex_attention."""
    assert ps.classify_failure(ValueError("NYI: embedding dimension 24 is not a power of 2"), flex=True) == \
        ("skipped", "NYI: embedding dimension 24 is not a power of 2")
    assert ps.classify_failure(ValueError("NYI: embedding dimension 24"))[0] == "error"  # SDPA: as before
    st, why = ps.classify_failure(RuntimeError("InductorError: No valid triton configs. OutOfResources: out of "
                                               "resource: shared memory\nmore"), flex=True)
    assert st == "skipped" and why.startswith("InductorError: No valid triton configs"), why
    assert ps.classify_failure(ValueError("bad thing"), flex=True) == ("error", "ValueError: bad thing")
    assert ps.classify_failure(FakeOom("CUDA out of memory."), oom_type=FakeOom, flex=True)[0] == "oom"
    pt = one_point("flex", "fwdbwd", "-b", "16", "--heads", "8", "-n", "4096", "-d", "64", "--pattern", "random",
                   "--density", "0.5")
    assert pt.block_mask and not pt.skip
    chk = ps.make_check([_stats("o", 0.3), _stats("dq", 0.4), _stats("dk", 0.2), _stats("dv", 0.1)], 4096 * 4,
                        16 * 8 * 4096, "sampled rows", ps.grad_scope_text("sampled rows", 4, 128))
    rec = ps.build_record(pt, 0, "ok", None, chk, ps.summarize([1e-3, 2e-3], 5, True),
                          {"inputs_bytes": 1, "outputs_bytes": 2, "workspace_bytes": 0})
    assert rec["name"] == "flex_attention/fwdbwd/b:16/h:8/n:4096/d:64/fp16/sparse:random/s:0.5/bs:128"
    assert rec["method"] == "flex_attention" and "block_mask" not in rec["problem"]
    assert not validate_record(rec), validate_record(rec)



# --- SDPA with a key-padding attn_mask (key padding, a varlen point's padded twin) ---------------


def test_key_padded_points_run_with_a_mask_except_on_flash():
    """--padding random and a varlen padded twin run on cudnn, efficient and math (an attn_mask),
    causal included (folded into the mask) up to MAX_MASK_ELEMENTS, beyond which the point is
    skipped with the size; flash keeps its reason; a paged padded twin stays skipped as paged."""
    pad = dict(one_point("flash", "fwd", "-b", "2", "--heads", "8", "-n", "100", "-d", "64").problem_json,
               padding="random")
    for be in ("cudnn", "efficient", "math"):
        for pass_ in ("fwd", "bwd", "fwdbwd"):
            assert ps.unsupported_reason(be, pass_, pad) == "", be
            assert ps.unsupported_reason(be, pass_, dict(pad, causal=True)) == "", be
    assert ps.unsupported_reason("flash", "fwd", pad) == "key padding: SDPA's flash back-end takes no attn_mask"
    big = dict(pad, causal=True, batch=64, seqlen_q=4096, seqlen_k=4096)  # 2^30 booleans
    why = ps.unsupported_reason("math", "fwd", big)
    assert why.startswith("key padding with a causal mask: the attn_mask would be [B, 1, Nq, Nk] = 1073741824 "
                          "booleans (more than peers_sdpa.py's 268435456"), why
    assert ps.unsupported_reason("math", "fwd", dict(big, causal=False)) == ""  # [B, 1, 1, Nk]: small
    twin = dict(pad, padding="none", seqlens="uniform:1-100", seq_lengths=[5, 100], varlen_layout="padded",
                seqlen_q=1, seqlen_k=100)
    assert ps.unsupported_reason("efficient", "fwd", twin) == ""
    assert ps.unsupported_reason("flash", "fwd", twin) == (
        "variable lengths (seqlens uniform:1-100, padded): key padding: SDPA's flash back-end takes no attn_mask")
    paged = ps.unsupported_reason("cudnn", "fwd", dict(twin, kv_layout="paged:64"))
    assert paged.startswith("paged K/V cache (kv_layout paged:64): SDPA takes contiguous K/V only"), paged
    # A paged varlen decode (each sequence's keys in pages of its own) and its padded twin, through
    # flashio: every SDPA back-end skips them as paged, flex runs both on the pages; the
    # contiguous twin runs masked.
    axes = ["-b", "3", "--heads", "8", "--kv-heads", "2", "-d", "64", "--seqlens", "uniform:0-300", "--seqlen-q", "1",
            "--varlen-as", "packed,padded", "--kv-layout", "contiguous,paged:64"]
    pts = _assert_peers_match_flashio(axes, ("flash", "cudnn", "efficient", "math", "flex"))
    on_pages = [p for p in pts if "/paged:64/" in p.name()]
    assert len(on_pages) == 2 * 5
    assert all(p.skip.startswith("paged K/V cache (kv_layout paged:64)") for p in on_pages if p.backend != "flex")
    assert not any(p.skip for p in on_pages if p.backend == "flex")
    runs = sorted(p.method for p in pts if not p.skip)
    assert runs == ["flex_attention"] * 3 + ["sdpa_cudnn", "sdpa_efficient", "sdpa_math"], runs



def test_sdpa_call_arguments_without_torch():
    """sdpa_function's call, with a recording stand-in for torch.nn.functional (no torch needed):
    dense: is_causal and no attn_mask; with a key-padding mask: attn_mask, is_causal False (SDPA
    refuses both); scale 1/sqrt(d); enable_gqa only for GQA/MQA, and a torch that lacks it
    (TypeError) becomes NotImplementedError (a `skipped` record saying PyTorch >= 2.5)."""
    class F:
        def __init__(self, refuse_gqa=False):
            self.calls, self.refuse_gqa = [], refuse_gqa

        def scaled_dot_product_attention(self, q, k, v, **kw):
            if self.refuse_gqa and "enable_gqa" in kw:
                raise TypeError("scaled_dot_product_attention() got an unexpected keyword argument 'enable_gqa'")
            self.calls.append((q, k, v, kw))
            return "O"

    class FakeTorch:
        __version__ = "2.4.0"

    mask = object()
    for p, m, want in ((P(causal=True), None, {"is_causal": True}),
                       (P(padding=True), mask, {"attn_mask": mask}),
                       (P(causal=True, padding=True, kv_heads=4), mask, {"attn_mask": mask, "enable_gqa": True}),
                       (P(kv_heads=1), None, {"is_causal": False, "enable_gqa": True})):
        f = F()
        assert ps.sdpa_function(FakeTorch, f, p, m)("q", "k", "v") == "O"
        assert f.calls == [("q", "k", "v", dict(want, scale=1.0 / 8.0))], (p, f.calls)
    try:
        ps.sdpa_function(FakeTorch, F(refuse_gqa=True), P(kv_heads=4), mask)("q", "k", "v")
        raise AssertionError("no NotImplementedError")
    except NotImplementedError as e:
        assert "this torch (2.4.0) has no enable_gqa" in str(e), e
        assert ps.classify_failure(e)[0] == "skipped"
    f = F(refuse_gqa=True)  # MHA never passes enable_gqa
    assert ps.sdpa_function(FakeTorch, f, P(padding=True), mask)("q", "k", "v") == "O"


class _FakeF:
    """torch.nn.functional.scaled_dot_product_attention as documented (PyTorch 2.5+), in float64 on
    a CPU torch that has none: attn_mask boolean (True: attend) broadcast to [B, H, Nq, Nk], or
    is_causal (top-left), not both; scale; enable_gqa (query head h reads K/V head h // group). A
    row with no True is NaN (softmax over -inf, as the fused back-ends), or 0 with safe=True (the
    math back-end's _safe_softmax). Records each call's keyword arguments."""

    def __init__(self, torch, safe=False):
        self.torch, self.safe, self.calls = torch, safe, []

    def scaled_dot_product_attention(self, q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        t = self.torch
        self.calls.append(dict(attn_mask=attn_mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa))
        assert not (is_causal and attn_mask is not None), "SDPA refuses is_causal with an attn_mask"
        if enable_gqa:
            g = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        else:
            assert k.shape[1] == q.shape[1]
        s = (q.double() @ k.double().transpose(-2, -1)) * scale
        nq, nk = s.shape[-2:]
        if is_causal:
            s = s.masked_fill(t.arange(nk)[None, :] > t.arange(nq)[:, None], float("-inf"))
        if attn_mask is not None:
            assert attn_mask.dtype == t.bool and attn_mask.dim() == 4
            s = s.masked_fill(~attn_mask.expand(s.shape), float("-inf"))
        pr = t.softmax(s, -1)
        if self.safe:
            pr = t.where(t.isinf(s).all(-1, keepdim=True), t.zeros_like(pr), pr)
        return (pr @ v.double()).to(q.dtype)


def _element_visible(p, b, i, j, lengths) -> bool:
    return j < lengths[b] and (not p.causal or j <= i)


def test_sdpa_mask_path_on_cpu_torch():
    """Where this Python has torch (CPU; 1.13 has no SDPA: _FakeF stands in for it): sdpa_key_mask
    is flashio's element mask (key j < L_b, causal top-left j <= i), [B, 1, 1, Nk] or [B, 1, Nq, Nk];
    sdpa_function passes it as attn_mask with is_causal off (dense: is_causal, no mask), scale
    1/sqrt(d), enable_gqa for GQA; the masked output passes run_check. A sequence of length 0:
    NaN rows (softmax over -inf) make empty_sequence_reason skip the point with the reason, 0 rows
    (_safe_softmax) are checked and pass against the reference's O = 0; a NaN elsewhere is left to
    the check, which fails."""
    try:
        import torch
    except ImportError:
        print("      (skipped: no torch in this Python; Debian's python3-torch, CPU, runs it)")
        return
    cpu = torch.device("cpu")
    cases = (ps.Problem(3, 4, 2, 16, "fp16", False, 41, kv_heads=2, seqlen_k=9, seq_lengths=(9, 0, 5)),  # padded twin
             ps.Problem(2, 4, 7, 16, "bf16", True, 42, seqlen_k=5, padding=True),                        # causal, Nq > Nk
             ps.Problem(2, 2, 6, 16, "fp16", True, 43, kv_heads=1, seqlen_k=30, padding=True),            # GQA, Nq < Nk
             ps.Problem(2, 2, 6, 16, "fp16", True, 44))                                                   # dense: no mask
    for p in cases:
        data = ps.ProblemData(torch, p, cpu)
        lengths = ps.key_lengths(p)
        fake = _FakeF(torch)
        mask = ps.sdpa_key_mask(torch, p, data.key_lengths, cpu) if p.key_padded else None
        if mask is not None:
            assert mask.dtype == torch.bool
            assert tuple(mask.shape) == ((p.batch, 1, p.seqlen, p.seqlen_k) if p.causal else (p.batch, 1, 1, p.seqlen_k))
            full = mask.expand(p.batch, 1, p.seqlen, p.seqlen_k)
            want = torch.tensor([[[[_element_visible(p, b, i, j, lengths) for j in range(p.seqlen_k)]
                                   for i in range(p.seqlen)]] for b in range(p.batch)])
            assert torch.equal(full, want), p
        attn = ps.sdpa_function(torch, fake, p, mask)
        o = attn(data.q, data.k, data.v)
        call = fake.calls[-1]
        assert call["scale"] == p.softmax_scale and call["enable_gqa"] == (p.kv_heads < p.heads)
        assert (call["attn_mask"] is mask) and call["is_causal"] == (p.causal and mask is None), call
        empty = [b for b, n in enumerate(lengths) if n == 0]
        why = ps.empty_sequence_reason(torch, "sdpa_efficient", data, o) if mask is not None else ""
        if empty:
            assert not torch.isfinite(o[empty[0]]).any()  # softmax over a row of -inf
            assert why == ("sdpa_efficient gives non-finite O for the sequence of length 0 (batch 1: its attn_mask "
                           "rows are all False, no key to attend); flashio's convention there is O = 0 with zero "
                           "gradients, so the point is not checked or timed"), why
            safe = ps.sdpa_function(torch, _FakeF(torch, safe=True), p, mask)(data.q, data.k, data.v)
            assert (safe[empty[0]] == 0).all()
            assert ps.empty_sequence_reason(torch, "sdpa_math", data, safe) == ""
            c = ps.run_check(torch, data, safe)
            assert c["passed"] and c["rows_checked"] == p.batch * p.heads * p.seqlen, c
            # gradients: a non-finite dK of the empty sequence is named
            grads = [torch.zeros_like(data.q), torch.zeros_like(data.k), torch.zeros_like(data.v)]
            grads[1][empty[0]] = float("nan")
            why = ps.empty_sequence_reason(torch, "sdpa_cudnn", data, safe, grads)
            assert why.startswith("sdpa_cudnn gives non-finite dK for the sequence of length 0"), why
        else:
            assert why == ""
            c = ps.run_check(torch, data, o)
            assert c["passed"] and c["worst_ratio"] < 0.5, (p, c)
            unpadded = [p.seqlen_k] * p.batch
            if mask is not None and any(_element_visible(p, b, i, j, lengths) != _element_visible(p, b, i, j, unpadded)
                                        for b in range(p.batch) for i in range(p.seqlen) for j in range(p.seqlen_k)):
                # where the padding hides a key a row would see, the same call without it fails the check
                bad = ps.sdpa_function(torch, _FakeF(torch), p, None)
                assert not ps.run_check(torch, data, bad(data.q, data.k, data.v))["passed"], p
                # and a NaN on a row of a real sequence is the check's to fail, not a skip
                o2 = o.clone()
                o2[0, 0, 0, 0] = float("nan")
                assert ps.empty_sequence_reason(torch, "sdpa_math", data, o2) == ""
                assert not ps.run_check(torch, data, o2)["passed"]


def main() -> int:
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print(f"ok    {name}")
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"FAIL  {name}")
            traceback.print_exc()
    print(f"{len(tests) - failed}/{len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
