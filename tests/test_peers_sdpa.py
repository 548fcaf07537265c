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
package needed).
"""
from __future__ import annotations

import importlib.util
import io
import json
import math
import os
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
             "$id", "$defs"}
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


def _assert_peers_match_flashio(axes: list, backends=("flash", "cudnn", "efficient", "math")) -> list:
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
                    expect.append((f"sdpa_{be}/{q[1]}/{pname}", q[2], q[3]))
    got = [(p.name(), p.flops, p.problem_json) for p in pts]
    assert got == expect, (axes, got[:3], expect[:3])
    for p in pts:
        rec = ps.build_record(p, 0, "skipped", p.skip or "not run")
        assert rec["name"] == p.name() and rec["flops"] == p.flops and rec["problem"] == p.problem_json
        errs = validate_record(rec)
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
        # skipped, each with its reason
        reasons = {
            "sdpa_flash/fwd/b:2/h:8/n:128/d:64/fp16/pad": "key padding: SDPA's flash back-end takes no attn_mask",
            "sdpa_cudnn/fwd/b:2/h:8/n:128/d:64/fp16/pad": "key padding: peers_sdpa.py passes no attn_mask",
            "sdpa_efficient/fwd/b:2/h:8/kvh:2/n:128/d:64/fp16": "GQA/MQA (kv_heads < heads)",
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
    runnable = [p for p in pts if not p.skip]
    assert [p.name() for p in runnable] == ["sdpa_efficient/fwdbwd/b:2/h:8/n:100/d:32/bf16/causal"]
    assert runnable[0].problem == ps.Problem(2, 8, 100, 32, "bf16", True, 7)
    assert any(p.skip.startswith("seqlen_k != seqlen_q") for p in pts)
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
        assert r.returncode == 0 and r.stdout == (
            "sdpa_math/fwdbwd/b:64/h:16/n:1024/d:64/fp16/pad  skipped: key padding: peers_sdpa.py passes no "
            "attn_mask to SDPA (not implemented)\n"), (r.stdout, r.stderr)
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


def _stats(name, ratio, finite=True, atol=1e-3, rtol=1e-2, elements=64):
    nan = math.nan
    return dict(name=name, max_abs_err=ratio * 1e-3 if finite else nan, max_rel_err=ratio * 1e-2 if finite else nan,
                worst_ratio=ratio if finite else nan, atol=atol, rtol=rtol, elements=elements, finite=finite)


CHECK_SCHEMA = SCHEMA["$defs"]["record"]["properties"]["check"]


def test_tolerances_and_check_object():
    assert ps.tolerance_for("fp16") == (1e-2, 1e-2) and ps.tolerance_for("bf16") == (8e-2, 8e-2)
    # bench/measure/check.cpp gradient_tolerance_for
    assert ps.tolerance_for("fp16", gradient=True) == (2e-2, 2e-2)
    assert ps.tolerance_for("bf16", gradient=True) == (1.6e-1, 1.6e-1)
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
