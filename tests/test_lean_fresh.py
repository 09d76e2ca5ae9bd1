"""The stat-only freshness test a verify runs before its Lean check: after an incremental
build (untouched .oleans older than another module's newer source) it still says fresh from
the last complete build's record, and any change to a source, an .olean or the toolchain
sends the verify back to the build."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tbmm.lean import build as lb

MODS = ("TBMM", "TBMM.A", "TBMM.B")


def _project(tmp_path: Path) -> tuple[Path, Path, Any]:
    root = tmp_path / "proj"
    (root / "TBMM").mkdir(parents=True)
    (root / "TBMM.lean").write_text("prelude\nimport TBMM.A\nimport TBMM.B\n")
    (root / "TBMM" / "A.lean").write_text("prelude\n")
    (root / "TBMM" / "B.lean").write_text("prelude\n")
    out = lb.build_dir(root)
    (out / "TBMM").mkdir(parents=True)
    tc = SimpleNamespace(version="4.35.0", commit="abc")
    (out / lb.STAMP).write_text(lb._stamp(tc))
    t = 1_000_000_000_000_000_000
    for i, mod in enumerate(MODS):
        src = lb.module_file(root, mod)
        os.utime(src, ns=(t + i, t + i))
        o = lb.olean_file(out, mod)
        o.write_bytes(b"olean " + mod.encode())
        os.utime(o, ns=(t + 100 + i, t + 100 + i))
    return root, out, tc


def _set_mtime(p: Path, ns: int) -> None:
    os.utime(p, ns=(ns, ns))


def test_all_newer_is_fresh_without_a_record(tmp_path: Path) -> None:
    root, out, tc = _project(tmp_path)
    assert lb._library_fresh(root, tc)
    assert not (out / lb.FRESH).exists()


def test_an_incremental_build_is_fresh_from_the_last_complete_builds_record(
    tmp_path: Path,
) -> None:
    root, out, tc = _project(tmp_path)
    # A was edited and rebuilt; B's .olean (untouched, it does not import A) is now older
    # than A's source: the all-newer-than-all test fails although nothing is stale
    a_src, a_olean = lb.module_file(root, "TBMM.A"), lb.olean_file(out, "TBMM.A")
    _set_mtime(a_src, 2_000_000_000_000_000_000)
    _set_mtime(a_olean, 2_000_000_000_000_000_100)
    assert not lb._library_fresh(root, tc)
    lb._record_fresh(root, out, tc, ["TBMM.B"])  # not every library module: no record
    assert not (out / lb.FRESH).exists()
    lb._record_fresh(root, out, tc, list(MODS))
    assert lb._library_fresh(root, tc)


def _recorded(tmp_path: Path) -> tuple[Path, Path, Any]:
    root, out, tc = _project(tmp_path)
    _set_mtime(lb.module_file(root, "TBMM.A"), 2_000_000_000_000_000_000)
    _set_mtime(lb.olean_file(out, "TBMM.A"), 2_000_000_000_000_000_100)
    lb._record_fresh(root, out, tc, list(MODS))
    assert lb._library_fresh(root, tc)
    return root, out, tc


def test_an_edited_source_is_not_fresh(tmp_path: Path) -> None:
    root, _out, tc = _recorded(tmp_path)
    b = lb.module_file(root, "TBMM.B")
    _set_mtime(b, b.stat().st_mtime_ns + 1)
    assert not lb._library_fresh(root, tc)


def test_a_source_edited_behind_its_old_mtime_is_not_fresh(tmp_path: Path) -> None:
    root, _out, tc = _recorded(tmp_path)
    b = lb.module_file(root, "TBMM.B")
    ns = b.stat().st_mtime_ns
    b.write_text("prelude\ntheorem t : True := True.intro\n")
    _set_mtime(b, ns)
    assert not lb._library_fresh(root, tc)


def test_a_replaced_olean_a_new_module_or_another_toolchain_is_not_fresh(
    tmp_path: Path,
) -> None:
    root, out, tc = _recorded(tmp_path)
    o = lb.olean_file(out, "TBMM.B")
    _set_mtime(o, o.stat().st_mtime_ns + 5)
    assert not lb._library_fresh(root, tc)

    root, out, tc = _recorded(tmp_path / "2")
    (root / "TBMM" / "C.lean").write_text("prelude\n")
    assert not lb._library_fresh(root, tc)

    root, out, tc = _recorded(tmp_path / "3")
    assert not lb._library_fresh(root, SimpleNamespace(version="4.36.0", commit="abc"))


def test_a_damaged_record_is_not_fresh(tmp_path: Path) -> None:
    root, out, tc = _recorded(tmp_path)
    (out / lb.FRESH).write_text("{not json")
    assert not lb._library_fresh(root, tc)
