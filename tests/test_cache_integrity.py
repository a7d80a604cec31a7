"""The result cache is authenticated: what a cache entry says reaches the user only if this user's gradfix wrote it.

A cache directory can be shared (`GRADFIX_CACHE_DIR`) or edited by anyone who
can write it; a tampered entry once put `grad_scale(x, -1.5)` into a source
file through `fix --apply`. Entries carry an HMAC under a per-user key kept
outside the cache directory; one that fails it, or is malformed in any way,
is a miss, and the run's output is the same as without the cache.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradfix.cache import Cache, load_key
from gradfix.cli import main

SEED = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)


    def step():
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -0.5 * F.mse_loss(x, y.detach())
        l2.backward()
    """
)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private cache directory and a private user cache home (where the key lives)."""
    home = tmp_path / "home-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    cache_dir = tmp_path / "shared-cache"
    monkeypatch.setenv("GRADFIX_CACHE_DIR", str(cache_dir))
    monkeypatch.chdir(tmp_path)
    return {"home": home, "cache": cache_dir, "key": home / "gradfix" / "cache-key"}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def entries(cache_dir: Path):
    return sorted(cache_dir.rglob("*.json"))


def split(entry: Path):
    mac, _, payload = entry.read_bytes().partition(b"\n")
    return mac, payload


def sign(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b"\n" + payload


def seed_file(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SEED)
    return path


def expected_fix(tmp_path: Path) -> bytes:
    """What `fix --apply` writes without any cache."""
    other = tmp_path / "nocache" / "train.py"
    other.parent.mkdir()
    other.write_text(SEED)
    result = invoke("fix", "--apply", "--no-cache", other)
    assert result.exit_code == 0, result.output
    return other.read_bytes()


# -------------------------------------------------------------------- the key


def test_the_key_is_created_private_and_outside_the_cache_directory(env, tmp_path):
    path = seed_file(tmp_path)
    assert invoke("check", path).exit_code == 1
    key = env["key"]
    assert key.is_file() and len(key.read_bytes()) == 32
    if os.name != "nt":
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert stat.S_IMODE(key.parent.stat().st_mode) & 0o077 == 0
    assert not any(p.name == "cache-key" for p in env["cache"].rglob("*"))
    (entry,) = entries(env["cache"])
    mac, payload = split(entry)
    assert mac == hmac.new(key.read_bytes(), payload, hashlib.sha256).hexdigest().encode()
    # A second run is served by the entry.
    cache = Cache()
    assert cache.get(json.loads(payload)["key"], "t.py") is not None and cache.hits == 1
    assert load_key() == key.read_bytes()


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
@pytest.mark.parametrize("problem", ["group-readable", "short", "directory"])
def test_an_untrustworthy_key_turns_the_cache_off_without_failing_the_run(env, tmp_path, problem):
    key = env["key"]
    key.parent.mkdir(parents=True)
    if problem == "group-readable":
        key.write_bytes(os.urandom(32))
        key.chmod(0o640)
    elif problem == "short":
        key.write_bytes(b"0123")
        key.chmod(0o600)
    else:
        key.mkdir()
    path = seed_file(tmp_path)
    result = invoke("fix", "--apply", path)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert path.read_bytes() == expected_fix(tmp_path)
    assert entries(env["cache"]) == []  # nothing written without a trustworthy key
    assert load_key(key) is None


def test_a_key_that_cannot_be_created_turns_the_cache_off(env, tmp_path):
    env["home"].mkdir()
    (env["home"] / "gradfix").write_text("a file where the key's directory should be")
    path = seed_file(tmp_path)
    result = invoke("fix", "--apply", path)
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == expected_fix(tmp_path)
    assert entries(env["cache"]) == []


def test_concurrent_first_runs_agree_on_one_key(tmp_path):
    from concurrent.futures import ProcessPoolExecutor

    target = tmp_path / "k" / "cache-key"
    with ProcessPoolExecutor(max_workers=3) as pool:
        keys = list(pool.map(load_key, [target] * 12))
    assert len(set(keys)) == 1 and keys[0] is not None and len(keys[0]) == 32
    assert [p.name for p in target.parent.iterdir()] == ["cache-key"]  # no temporaries left


# -------------------------------------------------------------------- tampering


def _fill(env, tmp_path):
    """A cache filled by `fix` (diff only), and the one entry it wrote."""
    path = seed_file(tmp_path)
    result = invoke("fix", path)
    assert result.exit_code == 1 and "-0.5" in result.output
    (entry,) = entries(env["cache"])
    return path, entry


def _with_fixed(payload: bytes, edit) -> bytes:
    document = json.loads(payload)
    fixed = base64.b64decode(document["result"]["fixed"])
    document["result"]["fixed"] = base64.b64encode(edit(fixed)).decode()
    return json.dumps(document, separators=(",", ":")).encode()


def test_a_flipped_byte_in_the_cached_fix_never_reaches_the_file(env, tmp_path):
    path, entry = _fill(env, tmp_path)
    mac, payload = split(entry)
    document = json.loads(payload)
    fixed = base64.b64decode(document["result"]["fixed"])
    assert b"grad_scale(x, -0.5)" in fixed
    # One byte of the payload: '0' -> '1' inside the fixed source ("-0.5" -> "-1.5").
    tampered = _with_fixed(payload, lambda b: b.replace(b"grad_scale(x, -0.5)", b"grad_scale(x, -1.5)"))
    assert sum(a != b for a, b in zip(json.loads(tampered)["result"]["fixed"], document["result"]["fixed"])) >= 1
    entry.write_bytes(mac + b"\n" + tampered)  # the old, now wrong, MAC

    result = invoke("fix", "--apply", path)
    assert result.exit_code == 0, result.output
    written = path.read_bytes()
    assert b"-1.5" not in written
    assert written == expected_fix(tmp_path)


def test_a_single_bit_flip_anywhere_in_the_entry_is_a_miss(env, tmp_path):
    path, entry = _fill(env, tmp_path)
    raw = bytearray(entry.read_bytes())
    key = json.loads(split(entry)[1])["key"]
    for index in (0, 70, len(raw) // 2, len(raw) - 2):
        flipped = bytearray(raw)
        flipped[index] ^= 0x01
        entry.write_bytes(bytes(flipped))
        cache = Cache()
        assert cache.get(key, str(path)) is None and cache.misses == 1
    entry.write_bytes(bytes(raw))
    assert Cache().get(key, str(path)) is not None  # the untouched entry is a hit


def test_an_entry_signed_with_another_key_is_a_miss(env, tmp_path):
    """What a second user sharing GRADFIX_CACHE_DIR can write: a well-formed entry under their own key."""
    path, entry = _fill(env, tmp_path)
    _, payload = split(entry)
    forged = _with_fixed(payload, lambda b: b.replace(b"-0.5", b"-1.5"))
    entry.write_bytes(sign(os.urandom(32), forged))
    result = invoke("fix", "--apply", path)
    assert result.exit_code == 0
    assert b"-1.5" not in path.read_bytes() and path.read_bytes() == expected_fix(tmp_path)


def test_an_unsigned_entry_of_the_old_format_is_a_miss(env, tmp_path):
    path, entry = _fill(env, tmp_path)
    _, payload = split(entry)
    entry.write_bytes(_with_fixed(payload, lambda b: b.replace(b"-0.5", b"-1.5")))  # bare JSON, as schema 1 wrote
    assert invoke("fix", "--apply", path).exit_code == 0
    assert path.read_bytes() == expected_fix(tmp_path)


def test_an_entry_moved_to_another_name_is_a_miss(env, tmp_path):
    """The MAC covers the document, which names its key: a valid entry under another file's name does not apply."""
    path, entry = _fill(env, tmp_path)
    other = tmp_path / "other.py"
    other.write_text(SEED.replace("-0.5", "-2.0"))
    assert invoke("check", other).exit_code == 1
    other_entry = [e for e in entries(env["cache"]) if e != entry][0]
    other_entry.write_bytes(entry.read_bytes())
    assert invoke("fix", "--apply", other).exit_code == 0
    assert b"grad_scale(x, -2.0)" in other.read_bytes() and b"-0.5" not in other.read_bytes()


# -------------------------------------------------------------------- malformed, yet authenticated

MALFORMED = {
    "error is a number": lambda d: d["result"].__setitem__("error", 5),
    "applied is a string": lambda d: d["result"].__setitem__("applied", "1"),
    "applied is a bool": lambda d: d["result"].__setitem__("applied", True),
    "findings is a dict": lambda d: d["result"].__setitem__("findings", {}),
    "a finding's line is a string": lambda d: d["result"]["findings"][0].__setitem__("line", "11"),
    "a finding lacks its code": lambda d: d["result"]["findings"][0].pop("code"),
    "a finding has an extra field": lambda d: d["result"]["findings"][0].__setitem__("extra", 1),
    "fix.safe is a string": lambda d: d["result"]["findings"][0]["fix"].__setitem__("safe", "yes"),
    "an import has two parts": lambda d: d["result"]["findings"][0]["fix"].__setitem__("imports", [["a", "b"]]),
    "fixed is not base64": lambda d: d["result"].__setitem__("fixed", "not base64!"),
    "fixed is a number": lambda d: d["result"].__setitem__("fixed", 7),
    "result is a list": lambda d: d.__setitem__("result", []),
    "an extra top-level field": lambda d: d.__setitem__("more", 1),
    "schema 1": lambda d: d.__setitem__("schema", 1),
}


def _resign(entry: Path, payload: bytes) -> None:
    entry.write_bytes(sign(load_key(), payload))


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_authenticated_entries_are_misses_and_the_output_is_unchanged(env, tmp_path, name):
    path = seed_file(tmp_path)
    baseline = invoke("check", "--output-format", "json", "--no-cache", path)
    fill = invoke("check", "--output-format", "json", path)
    assert fill.stdout == baseline.stdout
    (entry,) = entries(env["cache"])
    _, payload = split(entry)
    document = json.loads(payload)
    if name.startswith("fixed"):
        document["result"]["fixed"] = base64.b64encode(b"x = 1\n").decode()
    MALFORMED[name](document)
    _resign(entry, json.dumps(document).encode())
    key = json.loads(payload)["key"]
    cache = Cache()
    assert cache.get(key, str(path)) is None and cache.misses == 1
    again = invoke("check", "--output-format", "json", path)
    assert "Traceback" not in again.output
    assert (again.exit_code, again.stdout) == (baseline.exit_code, baseline.stdout)


@pytest.mark.parametrize(
    "payload",
    [b'{"schema": 2, "key": "tru', b"", b"\xff\xfe\x00garbage", b"[" * 100000, b"null", b"5", b'"a string"'],
    ids=["truncated", "empty", "not utf-8", "deeply nested", "null", "a number", "a string"],
)
def test_unparsable_authenticated_payloads_are_misses(env, tmp_path, payload):
    path = seed_file(tmp_path)
    baseline = invoke("fix", "--no-cache", path)
    assert invoke("fix", path).stdout == baseline.stdout
    (entry,) = entries(env["cache"])
    _resign(entry, payload)
    again = invoke("fix", path)
    assert "Traceback" not in again.output
    assert (again.exit_code, again.stdout) == (baseline.exit_code, baseline.stdout)
    entry.write_bytes(payload[:10])  # no MAC line at all
    again = invoke("fix", path)
    assert (again.exit_code, again.stdout) == (baseline.exit_code, baseline.stdout)


def test_the_reader_checks_exactly_the_fields_the_writer_writes(env, tmp_path):
    """Round trip of a result with every field set: a hit gives back the same result."""
    from gradfix.engine import FileResult
    from gradfix.findings import Finding, Fix, TextEdit

    fix = Fix(safe=False, description="d", unsafe_reason="r", edits=(TextEdit(1, 2, "x\n"),), first=(3, 4), statements=frozenset({(2, 0), (5, 4)}))
    finding = Finding("p.py", 5, 6, "GF001", "msg", fix, 7, 8)
    result = FileResult("p.py", [finding], b"fixed\n", 1, [finding], None, 2)
    cache = Cache(tmp_path / "c")
    cache.put("ab" * 32, result)
    back = cache.get("ab" * 32, "q.py")
    assert back is not None
    assert back.findings[0].fix == fix and back.findings[0].fix.statements == fix.statements
    assert back.findings[0].edits == finding.edits
    assert (back.fixed, back.applied, back.suppressed, back.error) == (b"fixed\n", 1, 2, None)
    assert back.findings[0].path == "q.py" and back.remaining[0].line == 5


def test_a_key_linked_by_another_run_between_the_read_and_the_test_is_read(tmp_path, monkeypatch):
    # The race the concurrent test meets only under load, made certain: this run's first read
    # finds no key, another first run links its key, then this run sees the file exist.
    import gradfix.cache as cache_module

    target = tmp_path / "k" / "cache-key"
    target.parent.mkdir(mode=0o700)
    other = b"k" * 32
    real_read = cache_module._read_key
    calls = []

    def read_then_other_run_links(path):
        calls.append(path)
        if len(calls) == 1:
            found = real_read(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(other)
            return found
        return real_read(path)

    monkeypatch.setattr(cache_module, "_read_key", read_then_other_run_links)
    assert load_key(target) == other
