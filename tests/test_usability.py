"""Prices from the model table (cache tokens at the cache price, --price-* for every agent),
display names, line progress without a terminal, tables that stay whole at 80 columns (or
Markdown when piped), and `tbmm runs` management."""

from __future__ import annotations

import io
import re
from fractions import Fraction
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from harness.agents import model_table
from harness.agents.registry import OracleAgent
from harness.agents.usage import Pricing, ResponseUsage, UsageTotals
from harness.cli import run as cli
from harness.cli.runs import runs_app
from harness.runs.runner import run_sweep
from harness.runs.store import Store
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import make_fake_task, stand_in_verify
from tbmm.cli import tasks as tbmm_cli
from tbmm.reports import leaderboard as L
from tbmm.reports import leaderboard_render as R
from tbmm.suite.tasks import TASKS_ROOT, load_suite

needs_sandbox = pytest.mark.skipif(not bwrap_path(), reason="no sandbox (bubblewrap) available")


# ---------------------------------------------------------------------------- prices


def test_cached_tokens_are_priced_as_cache() -> None:
    openai = ResponseUsage()
    openai.absorb(
        {
            "prompt_tokens": 1000,
            "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens": 10,
        }
    )
    assert (openai.input_tokens, openai.cached_tokens, openai.output_tokens) == (1000, 800, 10)
    anthropic = ResponseUsage()
    anthropic.absorb_doc(
        {
            "usage": {
                "input_tokens": 20,
                "cache_read_input_tokens": 900,
                "cache_creation_input_tokens": 80,
                "output_tokens": 7,
            }
        }
    )
    assert (anthropic.input_tokens, anthropic.cached_tokens, anthropic.cache_write_tokens) == (
        1000,
        900,
        80,
    )
    p = Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    assert p.cost(1000, 900, 80, 7) == pytest.approx(
        (20 * 3.0 + 900 * 0.3 + 80 * 3.75 + 7 * 15.0) / 1e6
    )
    flat = Pricing(input=3.0, output=15.0)  # no cache price: charged as input, never less
    assert flat.cost(1000, 900, 0, 0) == pytest.approx(1000 * 3.0 / 1e6)
    totals = UsageTotals(pricing=p)
    totals.add(openai)
    totals.add(anthropic)
    assert totals.cost_usd == pytest.approx(p.cost(1000, 800, 0, 10) + p.cost(1000, 900, 80, 7))
    unpriced = UsageTotals()
    unpriced.add(openai)
    assert unpriced.cost_usd is None  # unknown, never guessed
    assert UsageTotals().cost_usd == 0.0  # no request, no cost
    reported = ResponseUsage()
    reported.absorb({"prompt_tokens": 5, "completion_tokens": 1, "cost": 0.25})
    assert UsageTotals().add(reported) == 0.25  # the provider's own figure wins


def test_model_table_and_flags() -> None:
    row = model_table.lookup("gpt-4o")
    assert row is not None and row.vision and row.cached_input == 1.25
    assert model_table.lookup("openai/gpt-4o-mini").input == 0.15  # provider prefix
    assert model_table.lookup("gpt-5-mini").input == 0.25  # not swallowed by "gpt-5"
    assert model_table.lookup("no-such-model") is None
    p = model_table.resolve_pricing("claude-sonnet-4-5")
    assert p is not None and (p.input, p.cache_read, p.cache_write, p.output) == (
        3.0,
        0.3,
        3.75,
        15.0,
    )
    p = model_table.resolve_pricing("gpt-4o", price_out=9.0)
    assert p is not None and (p.input, p.output) == (2.5, 9.0) and "overridden" in p.source
    assert model_table.resolve_pricing("local-model", price_in=1.0) is None
    p = model_table.resolve_pricing("local-model", price_in=1.0, price_out=2.0)
    assert p is not None and p.cache_read is None and p.source == "--price-* flags"
    assert model_table.declares_vision("gpt-4.1") and not model_table.declares_vision(
        "deepseek-chat"
    )
    assert not model_table.declares_vision(None)
    for r in model_table.rows():
        assert r.source.startswith("https://") and re.fullmatch(r"\d{4}-\d{2}", r.checked)


def test_user_model_table_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "models.toml"
    user.write_text(
        '[[model]]\nmatch = ["gpt-4o"]\ninput = 1.0\noutput = 2.0\nvision = false\n'
        'source = "https://example.org/contract"\nchecked = "2026-01"\n'
    )
    monkeypatch.setenv("TBMM_MODELS", str(user))
    assert model_table.lookup("gpt-4o").input == 1.0 and not model_table.declares_vision("gpt-4o")
    user.write_text("[[model]]\nmatch = []\n")
    monkeypatch.setenv("TBMM_MODELS", str(user) + "x")
    with pytest.raises(model_table.ModelTableError, match="models.tomlx"):
        model_table.lookup("gpt-4o")


# ---------------------------------------------------------------------------- names, progress


@pytest.mark.slow
@needs_sandbox
def test_names_and_price_flags_for_a_command_agent_and_line_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = [make_fake_task(tmp_path / "tasks", f"cumcm-2099-{c}-fake") for c in "ab"]
    buf = io.StringIO()
    con = Console(file=buf, width=120)  # not a terminal: one line per finished trial
    assert not con.is_terminal
    db = tmp_path / "r.sqlite"
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    run_sweep(
        OracleAgent(),
        None,
        tasks,
        1,
        backend,
        1,
        db,
        False,
        verifier=stand_in_verify,
        console=con,
        name="Reference answers",
    )
    text = buf.getvalue()
    assert re.search(r"\[1/2\] cumcm-2099-a-fake seed 0: O-Eval 1\.000 .*ETA", text), text
    assert "[2/2] cumcm-2099-b-fake seed 0" in text
    # the CLI: --name and the --price-* flags reach a command agent (priced, named)
    monkeypatch.setattr(cli, "select_tasks", lambda spec, root=None, **kw: tasks[:1])
    monkeypatch.setattr(
        "harness.runs.runner.default_verifier", lambda: (stand_in_verify, "verification: stand-in")
    )
    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--agent",
            "command",
            "--agent-cmd",
            f"echo '{{}}' > {tasks[0].output_path}",
            "--agent-provider",
            "none",
            "--backend",
            "sandbox",
            "--db",
            str(db),
            "--name",
            "Echo {}",
            "--model",
            "local-m",
            "--price-in",
            "1",
            "--price-out",
            "2",
            "--timeout",
            "60",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "prices (USD per 1M tokens): input 1, cached 1, output 2 — --price-* flags" in res.output
    store = Store(db)
    names = store.names()
    assert sorted(names.values()) == ["Echo {}", "Reference answers"]
    echo = next(t for t in store.trials() if t["agent"] == "shell")
    assert echo["cost_usd"] == 0.0  # priced: no request was made, so $0 (not unknown)
    store.close()
    # the leaderboard shows names, not ids
    from tbmm.reports.results import load_rows

    rows, _, _ = load_rows(db, TASKS_ROOT)
    lb = L.compute(
        rows,
        tasks=[t.slug for t in tasks],
        task_suites={t.slug: "CUMCM" for t in tasks},
        names=names,
    )
    assert {x.shown for x in lb.entries} == {"Echo {}", "Reference answers"}
    assert "| 1 | Reference answers |" in R.to_markdown(lb)


def test_duplicate_names_stay_unique() -> None:
    assert L._labels(["a", "b", "c"], {"a": "X", "b": "X", "c": "a"}) == {
        "a": "X [a]",
        "b": "X [b]",
        "c": "a [c]",
    }


# ---------------------------------------------------------------------------- 80 columns


def _lines(con: Console) -> list[str]:
    return con.export_text().splitlines()


def _terminal(width: int = 80) -> Console:
    return Console(width=width, force_terminal=True, record=True, color_system=None)


def test_tasks_list_and_show_fit_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    suite = load_suite()
    con = _terminal()
    monkeypatch.setattr(tbmm_cli, "console", con)
    tbmm_cli.tasks_list(tasks_root=TASKS_ROOT, as_json=False)
    lines = _lines(con)
    assert max(len(x) for x in lines) <= 80, max(lines, key=len)
    for t in suite:
        assert any(t.slug in line for line in lines), t.slug  # whole, on one line
    for t in suite:
        con = _terminal()
        monkeypatch.setattr(tbmm_cli, "console", con)
        tbmm_cli.tasks_show(t.slug, tasks_root=TASKS_ROOT, as_json=False)
        lines = _lines(con)
        too_long = [x for x in lines if len(x) > 80]
        assert not too_long, (t.slug, too_long[:3])
        for m in t.metrics:  # every anchor value whole on a line, never split
            assert any(m.anchor_text in line for line in lines), (t.slug, m.anchor_text)
    # piped: Markdown with every column
    con = Console(file=io.StringIO(), width=80)
    monkeypatch.setattr(tbmm_cli, "console", con)
    tbmm_cli.tasks_list(tasks_root=TASKS_ROOT, as_json=False)
    out = con.file.getvalue()
    assert "| contest | slug | metrics | figures | files | checks |" in out


def _board(n_entries: int) -> L.Leaderboard:
    tasks = [t.slug for t in load_suite()]
    suites = {t.slug: t.suite for t in load_suite()}
    rows = []
    for e in range(n_entries):
        for i, t in enumerate(tasks):
            for s in (0, 1):
                status = "infra_error" if (e, i, s) == (0, 0, 1) else "scored"
                rows.append(
                    L.trial_row(
                        entry=f"codex@gpt-5-mini#{e:08x}",
                        agent="codex",
                        model="gpt-5-mini",
                        task=t,
                        suite=suites[t],
                        seed=s,
                        report={
                            "status": "scored",
                            "o_eval_exact": str(Fraction(i + e, 40)),
                            "robust_bo_eval_exact": "0",
                        },
                        cost_usd=0.0123,
                        literature_split=False,
                        infra_error="endpoint_unreachable: x" if status == "infra_error" else None,
                    )
                )
    names = {
        f"codex@gpt-5-mini#{e:08x}": f"codex gpt-5-mini, long display name {e}"
        for e in range(n_entries)
    }
    return L.compute(rows, tasks=tasks, task_suites=suites, names=names)


def test_leaderboard_fits_80_columns() -> None:
    lb = _board(5)
    con = _terminal()
    con.print(R.to_table(lb, 80))
    lines = _lines(con)
    assert max(len(x) for x in lines) <= 80, max(lines, key=len)
    text = "\n".join(lines)
    for x in lb.entries:
        assert any(x.shown in line for line in lines), x.shown  # names whole
        assert L.fmt_fixed(x.o_eval.mean * 100, 2) in text  # means whole
    assert "E1 = " in text and "[e1]" in text  # long names as E1..; the errored seed marked
    first = lb.entries[-1]  # the entry with the error
    assert first.errors == 1
    wide = _terminal(200)
    wide.print(R.to_table(lb, 200))
    assert " ± " in wide.export_text()  # inline on a wide screen


@pytest.mark.slow
@needs_sandbox
def test_runs_list_show_rename_delete(tmp_path: Path) -> None:
    tasks = [make_fake_task(tmp_path / "tasks", f"cumcm-2099-{c}-fake") for c in "ab"]
    db = tmp_path / "r.sqlite"
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    run_sweep(
        OracleAgent(),
        None,
        tasks,
        2,
        backend,
        2,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
    )
    app = typer.Typer()
    app.add_typer(runs_app, name="runs")
    r = CliRunner()
    res = r.invoke(app, ["runs", "list", "--db", str(db)])
    assert res.exit_code == 0 and "| oracle |  | 4 | 0 | $0.0000 |" in res.output, res.output
    res = r.invoke(app, ["runs", "rename", "orac", "The oracle", "--db", str(db)])
    assert res.exit_code == 0 and "name 'The oracle'" in res.output
    res = r.invoke(app, ["runs", "show", "The oracle", "--db", str(db), "--json"])
    assert res.exit_code == 0
    import json

    doc = json.loads(res.output)
    assert doc["name"] == "The oracle" and len(doc["trials"]) == 4
    assert all(t["trajectory"] == "trajectory.json" for t in doc["trials"])
    res = r.invoke(
        app,
        ["runs", "delete", "oracle", "--db", str(db), "--task", tasks[0].slug, "--seed", "1", "-y"],
    )
    assert res.exit_code == 0 and "deleted 1 trial(s)" in res.output
    assert len(Store(db).trials()) == 3
    res = r.invoke(app, ["runs", "delete", "oracle", "--db", str(db), "-y"])
    assert "deleted 3 trial(s) and entry oracle" in res.output
    store = Store(db)
    assert store.trials() == [] and store.entries() == []
    assert not (store.runs_dir / "oracle").exists()
    res = r.invoke(app, ["runs", "show", "nope", "--db", str(db)])
    assert res.exit_code == 2 and "unknown entry 'nope'" in res.output
