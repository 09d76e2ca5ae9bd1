"""CUMCM 2025 B replay (tbmm.replay.sic_thickness) on the real attachments: the verified
reference scores 1.0, claims must match their replay, a different valid fit is not
penalised, each constraint has a violating answer, and bad input scores 0 with a reason."""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.replay import BudgetExceeded, CpuBudget
from tbmm.replay import sic_thickness as st
from tbmm.suite.tasks import TASKS_ROOT, Task, load_task
from tbmm.verdict.pipeline import Evaluation, evaluate
from tbmm.verdict.scoring import read_artifact
from tbmm.verify import verify_artifact

SLUG = "cumcm-2025-b-sic-thickness"
FITS = ("sic_10deg", "sic_15deg", "si_10deg", "si_15deg")


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASKS_ROOT / "CUMCM" / SLUG)


@pytest.fixture(scope="module")
def params(task: Task) -> st.Params:
    assert task.replay_spec is not None
    return st.Params.model_validate(task.replay_spec.params)


def reference() -> dict[str, Any]:
    """The reference artifact as plain JSON data (numbers as floats or decimal text)."""
    doc = json.loads((TASKS_ROOT / "CUMCM" / SLUG / "reference.json").read_text())
    return doc["artifact"]


def run(task: Task, doc: dict[str, Any]) -> Evaluation:
    return evaluate(task, read_artifact(json.dumps(doc)))


def settle(task: Task, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with every claim set to what its decisions replay to (only constraints remain)."""
    ev = run(task, doc)
    assert ev.replay is not None and ev.replay.status == "ok", ev.replay
    out = copy.deepcopy(doc)
    vals = ev.replay.values
    for fit in FITS:
        out["fits"][fit]["rms_cm1"] = float(exact.parse_decimal(vals[f"fits.{fit}.rms_cm1"]))
    for sample in ("sic", "si"):
        out["q3"][f"{sample}_thickness_um"] = float(
            exact.parse_decimal(vals[f"{sample}.thickness_um"])
        )
    return out


def failed_ids(ev: Evaluation) -> set[str]:
    return {i.check.id for i in ev.gate.failed}


def fit_d(
    task: Task, params: st.Params, fit: str, abc: tuple[float, float, float], conv: str, d0: float
) -> float:
    """Thickness minimising the replayed RMS of one spectrum near d0 (grid, then golden section)."""
    sp = params.spectra[fit]
    meas = st.spectrum(task.data_dir, sp, params)
    angle = st._dec(sp.angle_deg)

    def rms(d: float) -> float:
        dec = st.Decision(fit, Fraction(d), *abc, conv)
        return st.evaluate_fit(meas, dec, angle, params.order_window, CpuBudget(60)).rms

    grid = [d0 * (0.9 + 0.2 * k / 40) for k in range(41)]
    k = min(range(len(grid)), key=lambda i: rms(grid[i]))
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(30):
        c, e = b - g * (b - a), a + g * (b - a)
        a, b = (a, e) if rms(c) < rms(e) else (c, b)
    return round((a + b) / 2, 4)


# --- the measured extrema ----------------------------------------------------------------


def test_sg_coefficients_are_the_textbook_ones() -> None:
    # 5-point quadratic/cubic smoothing: (-3, 12, 17, 12, -3)/35, as a polynomial in j.
    a = st.sg_coefficients(2, 3)
    weights = [sum(c * Fraction(j) ** k for k, c in enumerate(a)) for j in range(-2, 3)]
    assert weights == [Fraction(w, 35) for w in (-3, 12, 17, 12, -3)]
    assert (
        sum(
            sum(c * Fraction(j) ** k for k, c in enumerate(st.sg_coefficients(100, 3)))
            for j in range(-100, 101)
        )
        == 1
    )


@pytest.mark.slow
def test_exact_smoothing_equals_the_direct_convolution(task: Task, params: st.Params) -> None:
    _, refl = st.read_xlsx(task.data_dir / "attachments" / params.spectra["sic_10deg"].file)
    half, order = 20, 3
    ints, scale = st.smoothed(refl, half, order, 3000, 3010)
    a = st.sg_coefficients(half, order)
    w = [sum(c * Fraction(j) ** k for k, c in enumerate(a)) for j in range(-half, half + 1)]
    for i, s in zip(range(3000, 3011), ints, strict=True):
        direct = sum(
            (
                wj * exact.parse_decimal(refl[i + j])
                for j, wj in zip(range(-half, half + 1), w, strict=True)
            ),
            Fraction(0),
        )
        assert Fraction(s, scale) == direct


@pytest.mark.slow
def test_extrema_alternate_without_gaps(task: Task, params: st.Params) -> None:
    """The global order offset numbers consecutive extrema: none may be missing or spurious."""
    windows = [(float(x), float(y)) for x, y in params.excluded_cm1]
    for fit, sp in params.spectra.items():
        meas = st.spectrum(task.data_dir, sp, params)
        kinds = [e.kind for e in meas.extrema]
        assert len(kinds) >= 10, fit
        assert all(a == -b for a, b in zip(kinds, kinds[1:], strict=False)), fit
        gaps = [b.nu - a.nu for a, b in zip(meas.extrema, meas.extrema[1:], strict=False)]
        med = sorted(gaps)[len(gaps) // 2]
        assert all(0.6 * med < g < 1.5 * med for g in gaps), (fit, gaps)
        for e in meas.extrema:
            assert e.compared == (not any(p <= e.nu <= q for p, q in windows))


# --- the reference -----------------------------------------------------------------------


@pytest.mark.slow
def test_reference_scores_one_and_passes(task: Task) -> None:
    ev = run(task, reference())
    assert ev.gate.verdict == "pass" and not ev.gate.unverifiable
    assert ev.score.o_eval == 1
    rep = verify_artifact(task, json.dumps(reference()).encode(), lean=True)
    assert rep.exit_code == 0 and rep.lean == "ok" and rep.o_eval == 1.0, rep.failing


@pytest.mark.slow
def test_reference_is_the_best_thickness_for_its_index(task: Task, params: st.Params) -> None:
    """The recorded thicknesses are the replay's own optimum (to the 0.1 nm they are given)."""
    ref = reference()["fits"]
    for fit in FITS:
        f = ref[fit]
        abc = (f["n_A"], f["n_B"], f["n_C"])
        d = fit_d(task, params, fit, abc, f["maxima_order"], f["thickness_um"])
        assert abs(d - f["thickness_um"]) <= 2e-4, (fit, d)


@pytest.mark.slow
def test_bisection_is_converged(task: Task, params: st.Params, monkeypatch) -> None:  # noqa: ANN001
    ev = run(task, reference())
    monkeypatch.setattr(st, "_BISECTIONS", 80)
    ev2 = run(task, reference())
    for k, v in ev.replay.values.items():  # type: ignore[union-attr]
        assert v == ev2.replay.values[k], k  # type: ignore[union-attr]


# --- claims -------------------------------------------------------------------------------


def test_inflated_rms_claim_is_misreported(task: Task) -> None:
    doc = reference()
    doc["fits"]["sic_15deg"]["rms_cm1"] = 5.0  # replayed: 9.99; half of it is a lie
    ev = run(task, doc)
    assert ev.gate.verdict == "fail" and ev.score.o_eval == 0
    inst = next(i for i in ev.gate.failed if i.check.id == "sic_15deg_rms_claim")
    assert inst.message.startswith("misreported: claimed 5")


def test_thickness_claim_must_be_the_fitted_one(task: Task) -> None:
    doc = reference()
    doc["q3"]["si_thickness_um"] = 3.6  # the fits say 3.39015
    ev = run(task, doc)
    assert failed_ids(ev) == {"si_thickness_claim"} and ev.score.o_eval == 0


# --- different and better answers ----------------------------------------------------------


@pytest.mark.slow
def test_different_valid_method_scores_near_one(task: Task, params: st.Params) -> None:
    """Another literature index (SiC eps_inf = 6.70 instead of 6.52; Si a constant 3.42),
    thicknesses refitted per spectrum: a physically correct answer by a different method."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(task.dir) / "reference"))
    try:
        import fit_reference as fr
    finally:
        sys.path.pop(0)
    band = (1500.0, 3950.0)
    sic = fr.index_model(lambda v: fr.n_sic(v, 6.70, 797.0, 970.0), band, "ABC")
    si = (3.42, 0.0, 0.0)
    doc = reference()
    for fit in FITS:
        abc = sic if fit.startswith("sic") else si
        d = fit_d(task, params, fit, abc, "half_integer", doc["fits"][fit]["thickness_um"])
        doc["fits"][fit].update(thickness_um=d, n_A=abc[0], n_B=abc[1], n_C=abc[2])
    ev = run(task, settle(task, doc))
    assert ev.gate.verdict == "pass"
    assert ev.score.o_eval >= Fraction(9, 10), ev.score.o_eval


@pytest.mark.slow
def test_better_fit_is_not_penalised(task: Task, params: st.Params) -> None:
    """An index shape fitted to the data itself (the reference thickness kept) places the
    extrema better than the literature index: RMS below the reference, full score."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(task.dir) / "reference"))
    try:
        import fit_reference as fr
    finally:
        sys.path.pop(0)
    doc = reference()
    ev0 = run(task, doc)
    for fit in ("sic_10deg", "sic_15deg"):
        sp = params.spectra[fit]
        meas = st.spectrum(task.data_dir, sp, params)
        t0 = int(2 * exact.parse_decimal(ev0.replay.values[f"fits.{fit}.first_order"]))  # type: ignore[union-attr]
        d_cm = doc["fits"][fit]["thickness_um"] * 1e-4
        s2 = math.sin(math.radians(float(st._dec(sp.angle_deg)))) ** 2
        pts = [
            (e.nu / 1000, math.sqrt(((t0 + k) / (4 * d_cm * e.nu)) ** 2 + s2))
            for k, e in enumerate(meas.extrema)
            if e.compared
        ]
        a, b, c = fr.lstsq(
            [[1.0] * len(pts), [x * x for x, _ in pts], [1 / (x * x) for x, _ in pts]],
            [n for _, n in pts],
        )
        doc["fits"][fit].update(n_A=round(a, 5), n_B=round(b, 5), n_C=round(c, 5))
    ev = run(task, settle(task, doc))
    assert ev.gate.verdict == "pass"
    for fit in ("sic_10deg", "sic_15deg"):
        new, old = (
            float(exact.parse_decimal(e.replay.values[f"fits.{fit}.rms_cm1"])) for e in (ev, ev0)
        )  # type: ignore[union-attr]
        assert new < old, fit
    assert ev.score.o_eval == 1


@pytest.mark.slow
def test_wrong_phase_convention_is_feasible_but_scores_less(task: Task, params: st.Params) -> None:
    """The data judge the phase convention by how well the extrema fit (RMS about 24 against
    10-11 cm^-1): the SiC RMS metrics drop to about half. Its thickness, refitted for that
    convention, is consistent with its own index and orders, so the thickness metric does not
    punish it twice (a half-order shift moves d by about 4 %, within the index's own
    uncertainty)."""
    doc = reference()
    for fit in ("sic_10deg", "sic_15deg"):
        f = doc["fits"][fit]
        abc = (f["n_A"], f["n_B"], f["n_C"])
        f.update(
            maxima_order="integer",
            thickness_um=fit_d(task, params, fit, abc, "integer", f["thickness_um"]),
        )
    ev = run(task, settle(task, doc))
    assert ev.gate.verdict == "pass"
    assert Fraction(1, 2) < ev.score.o_eval < Fraction(95, 100)
    for fit in ("sic_10deg", "sic_15deg"):
        assert _reward(ev, f"{fit}_fit_rms") < Fraction(6, 10), fit


def test_old_anchor_thickness_fails_the_spectra(task: Task) -> None:
    """The former anchor (B157 reproduction, SiC 8.9815 um) with SiC's index cannot place
    the fringes of 附件1/2."""
    doc = reference()
    for fit in ("sic_10deg", "sic_15deg"):
        doc["fits"][fit]["thickness_um"] = 8.9815
    ev = run(task, settle(task, doc))
    assert {"sic_10deg_fits_spectrum", "sic_15deg_fits_spectrum"} <= failed_ids(ev)
    assert ev.score.o_eval == 0


# --- constraints: each has a violating answer that fails naming the decision ---------------


def test_thickness_out_of_range(task: Task) -> None:
    doc = reference()
    doc["fits"]["si_15deg"]["thickness_um"] = 0.3
    ev = run(task, doc)
    assert "si_15deg_thickness_range" in failed_ids(ev) and ev.score.o_eval == 0
    inst = next(i for i in ev.gate.failed if i.check.id == "si_15deg_thickness_range")
    assert inst.paths["field"] == ["fits.si_15deg.thickness_um"]


def test_model_that_misses_the_fringes(task: Task) -> None:
    doc = reference()
    for fit in ("sic_10deg", "sic_15deg"):
        doc["fits"][fit]["thickness_um"] *= 1.05  # same index: the fringes no longer fit
    ev = run(task, settle(task, doc))
    assert failed_ids(ev) == {"sic_10deg_fits_spectrum", "sic_15deg_fits_spectrum"}
    inst = next(i for i in ev.gate.failed if i.check.id == "sic_10deg_fits_spectrum")
    assert "fits.sic_10deg" in inst.message  # the replay names the decision


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "check"), [(3.0, "sic_index_plausible_hi"), (2.0, "sic_index_plausible_lo")]
)
def test_implausible_index(task: Task, params: st.Params, n: float, check: str) -> None:
    """A constant index outside SiC's range, the thickness refitted so the fringes still fit:
    the optical thickness alone would allow any thickness."""
    doc = reference()
    for fit in ("sic_10deg", "sic_15deg"):
        f = doc["fits"][fit]
        d0 = f["thickness_um"] * 2.5 / n
        f.update(
            n_A=n,
            n_B=0,
            n_C=0,
            thickness_um=fit_d(task, params, fit, (n, 0.0, 0.0), "half_integer", d0),
        )
    ev = run(task, settle(task, doc))
    assert check in failed_ids(ev) and ev.score.o_eval == 0
    assert not any(c.endswith("fits_spectrum") for c in failed_ids(ev))


def test_angles_must_agree(task: Task) -> None:
    """15 deg thickness 4.5% larger with the index 4.5% lower: the fringes still fit, but one
    wafer cannot have two thicknesses."""
    doc = reference()
    f = doc["fits"]["sic_15deg"]
    f["thickness_um"] = round(f["thickness_um"] * 1.045, 4)
    f.update(n_A=f["n_A"] / 1.045, n_B=f["n_B"] / 1.045, n_C=f["n_C"] / 1.045)
    ev = run(task, settle(task, doc))
    assert failed_ids(ev) == {"sic_angles_agree"} and ev.score.o_eval == 0


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d["fits"].pop("si_15deg"), "fits.si_15deg.thickness_um: missing"),
        (lambda d: d["fits"]["sic_10deg"].update(thickness_um=-7.4), "must be > 0"),
        (lambda d: d["fits"]["sic_10deg"].update(thickness_um="7.4"), "not a finite number"),
        (lambda d: d["fits"]["sic_10deg"].update(n_B=[1, 2]), "not a finite number"),
        (lambda d: d["fits"]["sic_10deg"].update(thickness_um=1e300), "outside what the replay"),
        (lambda d: d["fits"]["si_10deg"].update(maxima_order="full"), "must be one of"),
        (lambda d: d["fits"]["si_10deg"].pop("maxima_order"), "maxima_order: missing"),
        (lambda d: d["fits"]["si_10deg"].update(n_A=0.1, n_B=0, n_C=0), "no propagating wave"),
        (lambda d: d["fits"]["sic_15deg"].update(n_C=60), "does not increase"),
        (lambda d: d.update(fits=[1, 2, 3]), "missing"),
    ],
)
def test_bad_input_scores_zero_with_a_reason(task: Task, mutate, reason: str) -> None:  # noqa: ANN001
    doc = reference()
    mutate(doc)
    ev = run(task, doc)
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert reason in ev.replay.error
    assert ev.score.o_eval == 0
    assert all(m.reward == 0 for m in ev.score.metrics)


def test_nan_and_huge_tables_score_zero(task: Task) -> None:
    text = json.dumps(reference()).replace('"thickness_um": 7.436', '"thickness_um": NaN', 1)
    ev = evaluate(task, read_artifact(text))
    assert "not a finite number" in ev.replay.error and ev.score.o_eval == 0  # type: ignore[union-attr]
    doc = reference()
    doc["fits"]["sic_10deg"]["thickness_um"] = list(range(30))  # within the input caps
    ev = run(task, doc)
    assert "not a finite number (a list of 30 entries)" in ev.replay.error  # type: ignore[union-attr]
    assert ev.score.o_eval == 0
    doc["fits"]["sic_10deg"]["thickness_um"] = list(range(10**6))  # beyond them: unreadable
    rep = verify_artifact(task, json.dumps(doc).encode(), lean=False)
    assert rep.exit_code == 2 and rep.o_eval == 0 and rep.error


@pytest.mark.slow
def test_the_replay_respects_its_deadline(task: Task, params: st.Params) -> None:
    sp = params.spectra["sic_10deg"]
    meas = st.spectrum(task.data_dir, sp, params)
    dec = st.Decision("sic_10deg", Fraction(7), 2.5, 0.0, 0.0, "half_integer")
    with pytest.raises(BudgetExceeded):
        st.evaluate_fit(meas, dec, Fraction(10), params.order_window, CpuBudget(0.0))


def test_an_omitted_claim_zeroes_the_task(task: Task) -> None:
    """A missing input is not a pass: every metric is unverifiable and scores 0."""
    doc = reference()
    del doc["fits"]["si_10deg"]["rms_cm1"]
    ev = run(task, doc)
    assert all(m.reward == 0 for m in ev.score.metrics) and ev.score.o_eval == 0
    assert (
        "si_10deg_rms_claim needs fits.si_10deg.rms_cm1"
        in ev.gate.unverifiable["q3_sic_thickness_at_index"]
    )


# --- identifiability: the SiC thickness is judged at the index the answer states ------------


def _reward(ev: Evaluation, mid: str) -> Fraction:
    return next(m.reward for m in ev.score.metrics if m.id == mid)


def _constant_index(task: Task, params: st.Params, n: float, scale: float = 1.0) -> dict[str, Any]:
    """The reference with both SiC fits on a constant index n, each thickness the one that
    keeps d sqrt(n^2 - sin^2 theta) at the value the n = 2.6 fit finds (times `scale`)."""
    doc = reference()
    for fit in ("sic_10deg", "sic_15deg"):
        f = doc["fits"][fit]
        s2 = math.sin(math.radians(float(st._dec(params.spectra[fit].angle_deg)))) ** 2
        optical = _OPTICAL.setdefault(
            fit,
            fit_d(task, params, fit, (2.6, 0.0, 0.0), "half_integer", f["thickness_um"] * 1.05)
            * math.sqrt(2.6**2 - s2),
        )
        f.update(
            thickness_um=round(optical * scale / math.sqrt(n * n - s2), 9), n_A=n, n_B=0, n_C=0
        )
    return settle(task, doc)


_OPTICAL: dict[str, float] = {}


@pytest.mark.slow
def test_constant_indices_with_the_same_optical_thickness_score_the_same(
    task: Task, params: st.Params
) -> None:
    """The spectra fix d times the index: any constant SiC index in the plausible range,
    with its own thickness, places the extrema identically, so it scores the same, although
    the thicknesses differ by a quarter (scoring d itself paid for guessing the index)."""
    evs = {n: run(task, _constant_index(task, params, n)) for n in (2.2, 2.5, 2.8)}
    ds = {n: ev.replay.values["sic.thickness_um"] for n, ev in evs.items()}  # type: ignore[union-attr]
    assert float(ds[2.2]) / float(ds[2.8]) > 1.25, ds
    first = evs[2.2]
    for n, ev in evs.items():
        assert ev.gate.verdict == "pass", (n, [i.message for i in ev.gate.failed])
        for m, m0 in zip(ev.score.metrics, first.score.metrics, strict=True):
            assert abs(m.reward - m0.reward) < Fraction(1, 10**6), (n, m.id, m.reward, m0.reward)
        assert _reward(ev, "q3_sic_thickness_at_index") > Fraction(99, 100), n
    # and the constant index's poorer fit of the fringes' shape still costs (RMS metrics)
    assert first.score.o_eval < 1


@pytest.mark.slow
def test_a_wrong_optical_thickness_scores_lower(task: Task, params: st.Params) -> None:
    """The same index with a thickness 0.7 % off what the spectra imply for it: feasible
    (the fringes still fit within the gate's limit), but lower on the thickness metric and
    overall, whichever direction the error goes."""
    right = run(task, _constant_index(task, params, 2.5))
    for scale in (1.007, 0.993):
        wrong = run(task, _constant_index(task, params, 2.5, scale))
        assert wrong.gate.verdict == "pass", [i.message for i in wrong.gate.failed]
        r, w = (_reward(e, "q3_sic_thickness_at_index") for e in (right, wrong))
        assert w < r - Fraction(15, 100), (scale, w, r)
        assert wrong.score.o_eval < right.score.o_eval
    # the reference's own thicknesses are what its index implies (0.018 %): full credit
    ref = run(task, reference())
    err = float(exact.parse_decimal(ref.replay.values["sic.thickness_rel_error"]))  # type: ignore[union-attr]
    assert err < 5e-4 and _reward(ref, "q3_sic_thickness_at_index") == 1


@pytest.mark.slow
def test_implied_thickness_is_the_order_least_squares(task: Task, params: st.Params) -> None:
    """The implied thickness is the closed-form least squares of d q(nu_k) = T0 + k over the
    compared extrema: recomputed here by hand for the reference's 10 deg SiC fit, and for a
    constant index it is the same optical thickness whatever the index."""
    ev = run(task, reference())
    vals = ev.replay.values  # type: ignore[union-attr]
    f = reference()["fits"]["sic_10deg"]
    sp = params.spectra["sic_10deg"]
    meas = st.spectrum(task.data_dir, sp, params)
    s2 = math.sin(math.radians(10)) ** 2
    t0 = int(2 * exact.parse_decimal(vals["fits.sic_10deg.first_order"]))
    num = den = 0.0
    for k, e in enumerate(meas.extrema):
        if e.compared:
            x2 = (e.nu / 1000) ** 2
            n = f["n_A"] + f["n_B"] * x2 + f["n_C"] / x2
            q = 4 * e.nu * math.sqrt(n * n - s2)
            num, den = num + q * (t0 + k), den + q * q
    implied = float(exact.parse_decimal(vals["fits.sic_10deg.implied_thickness_um"]))
    assert abs(implied - num / den * 1e4) < 1e-8
    optical = []
    for n in (2.2, 2.8):
        e2 = run(task, _constant_index(task, params, n))
        d = float(exact.parse_decimal(e2.replay.values["fits.sic_10deg.implied_thickness_um"]))  # type: ignore[union-attr]
        optical.append(d * math.sqrt(n * n - s2))
    assert abs(optical[0] - optical[1]) < 1e-6 * optical[0]
